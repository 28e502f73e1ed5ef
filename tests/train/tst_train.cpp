#include "tst_train.h"

vidgraph::plugin::LoadedPlugin* tst_train::plugin_ = nullptr;

vidgraph::plugin::AttentionBackend* tst_train::backend() {
  return &plugin_->backend();
}

void tst_train::initTestCase() {
  auto report = vidgraph::plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin != nullptr, report.message().c_str());
  plugin_ = report.plugin;
}

QTEST_GUILESS_MAIN(tst_train)

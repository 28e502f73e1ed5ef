// engine/environment.h: the one reader of the environment options the front ends pass down.
#include "engine/environment.h"

#include <map>
#include <string>
#include <vector>

#include <QtTest/QtTest>

class tst_environment : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void unsetIsEmpty();
  void readsEachVariable();
};

void tst_environment::unsetIsEmpty() {
  qunsetenv("VIDGRAPH_PLUGIN_PATH");
  qputenv("VIDGRAPH_MODEL_PATHS", "");
  for (const std::string& name : vidgraph::engine::torchrun_variables()) qunsetenv(name.c_str());
  qputenv("WORLD_SIZE", "");  // empty = unset
  qunsetenv("CUDA_VISIBLE_DEVICES");
  const vidgraph::engine::Environment env = vidgraph::engine::read_environment();
  qunsetenv("VIDGRAPH_MODEL_PATHS");
  qunsetenv("WORLD_SIZE");
  QVERIFY(env.plugin_path.empty());
  QVERIFY(env.model_paths_file.empty());
  QVERIFY(env.torchrun.empty());
  QVERIFY(!env.cuda_visible_devices.has_value());
}

void tst_environment::readsEachVariable() {
  qputenv("VIDGRAPH_PLUGIN_PATH", "/first/dir::/second/dir:");
  qputenv("VIDGRAPH_MODEL_PATHS", "/home/me/extra_model_paths.yaml");
  qputenv("WORLD_SIZE", "2");
  qputenv("RANK", "1");
  qputenv("GLOO_SOCKET_IFNAME", "eth1");
  qputenv("CUDA_VISIBLE_DEVICES", "");  // set but empty: no GPU, unlike unset
  const vidgraph::engine::Environment env = vidgraph::engine::read_environment();
  for (const char* name : {"VIDGRAPH_PLUGIN_PATH", "VIDGRAPH_MODEL_PATHS", "WORLD_SIZE", "RANK", "GLOO_SOCKET_IFNAME",
                           "CUDA_VISIBLE_DEVICES"}) {
    qunsetenv(name);
  }
  QCOMPARE(env.plugin_path, (std::vector<std::string>{"/first/dir", "/second/dir"}));  // empty items skipped
  QCOMPARE(env.model_paths_file, std::string("/home/me/extra_model_paths.yaml"));
  const std::map<std::string, std::string> torchrun{{"GLOO_SOCKET_IFNAME", "eth1"}, {"RANK", "1"}, {"WORLD_SIZE", "2"}};
  QCOMPARE(env.torchrun, torchrun);
  QVERIFY(env.cuda_visible_devices.has_value());
  QCOMPARE(*env.cuda_visible_devices, std::string());
}

QTEST_GUILESS_MAIN(tst_environment)
#include "tst_environment.moc"

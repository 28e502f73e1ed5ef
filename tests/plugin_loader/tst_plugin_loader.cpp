// The plugin loader: the real plugin found in the build tree and through the caller's search path
// (what the front ends pass from VIDGRAPH_PLUGIN_PATH; the loader never reads the environment), and
// every failure (ABI / LibTorch mismatch, missing symbol, missing file, not a library, throwing
// factory, nothing found) reported with the file and the reason, never a crash. Also the parameter
// helpers of the SDK.
#include "plugins/api/plugin_loader.h"
#include "prepared_call.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/softmax.h>

#include <QtCore/QDir>
#include <QtCore/QFile>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <cmath>

#include <dlfcn.h>

using namespace vidgraph::plugin;

namespace {

const QString kBuildPluginDir = QStringLiteral(VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins");
const QString kFixtureDir = QStringLiteral(VIDGRAPH_FIXTURE_DIR);

QString fixture(const char* name) { return kFixtureDir + QStringLiteral("/lib") + QLatin1String(name) + QStringLiteral(".so"); }
QString real_plugin() { return kBuildPluginDir + QStringLiteral("/libvidgraph_attention.so"); }

std::string load_error(const QString& path) {
  std::string error;
  const LoadedPlugin* plugin = load_plugin_file(path.toStdString(), &error);
  return plugin ? std::string() : error;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class tst_plugin_loader : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void loads_from_build_tree_and_runs() {
    PluginLoadReport report = load_attention_plugin_from({kBuildPluginDir.toStdString()});
    QVERIFY2(report.plugin != nullptr, report.message().c_str());
    LoadedPlugin& p = *report.plugin;
    QCOMPARE(p.name(), std::string("vidgraph_attention"));
    QVERIFY(contains(plugin_version_string(p), "vidgraph_attention"));
    QVERIFY(contains(plugin_version_string(p), "plugin ABI " + std::to_string(host_plugin_abi_version())));
    std::vector<std::string> names;
    for (const auto& m : p.backend().methods()) names.push_back(m.name);
    QCOMPARE(names, (std::vector<std::string>{"full", "vsa", "sla_star"}));
    // One call through the loaded plugin: full attention equals the textbook formula.
    AttentionCall call;
    call.q = at::randn({1, 24, 2, 8}, at::kDouble);
    call.k = at::randn({1, 24, 2, 8}, at::kDouble);
    call.v = at::randn({1, 24, 2, 8}, at::kDouble);
    test_common::prepare_call(p.backend(), call, "full", {}, {2, 3, 4});
    const at::Tensor out = p.backend().forward(call);
    const auto bhsd = [](const at::Tensor& x) { return x.permute({0, 2, 1, 3}); };
    const at::Tensor expect = at::matmul(at::softmax(at::matmul(bhsd(call.q), bhsd(call.k).transpose(-1, -2)) /
                                                         std::sqrt(8.0), -1), bhsd(call.v)).permute({0, 2, 1, 3});
    // Relative to the output's size: with LibTorch 2.11's threaded kernels (the H100 machine) the
    // absolute 1e-12 once held for 39 runs in 40; a wrong formula is off by far more than 1e-10.
    const double err = ((out - expect).abs().max() / expect.abs().max()).item<double>();
    QVERIFY2(err < 1e-10, std::to_string(err).c_str());
    // A device with no path is a clear refusal through the plugin too.
    PrepareRequest meta;
    meta.method = "full";
    meta.device = c10::Device(c10::kMeta);
    meta.dtype = at::kDouble;
    meta.head_dim = 8;
    meta.grid = {2, 3, 4};
    const PrepareResult refused = p.backend().prepare(meta);
    QVERIFY(refused.prepared == nullptr);
    QVERIFY2(contains(refused.error, "not available on device meta"), refused.error.c_str());
  }

  void a_shut_down_backend_refuses_work() {
    // A copy: the build tree's plugin is shared by the whole process and must stay usable.
    QTemporaryDir dir;
    const QString copy = dir.filePath(QStringLiteral("libvidgraph_attention.so"));
    QVERIFY(QFile::copy(real_plugin(), copy));
    std::string error;
    LoadedPlugin* p = load_plugin_file(copy.toStdString(), &error);
    QVERIFY2(p != nullptr, error.c_str());
    AttentionCall call;
    call.q = call.k = call.v = at::randn({1, 24, 2, 8}, at::kDouble);
    test_common::prepare_call(p->backend(), call, "full", {}, {2, 3, 4});
    p->backend().shutdown();
    try {
      p->backend().forward(call);
      QFAIL("a shut-down backend must refuse work");
    } catch (const std::exception& e) {
      QVERIFY2(contains(e.what(), "shut down"), e.what());
    }
  }

  void a_file_is_loaded_once_and_never_unloaded() {
    std::string error;
    LoadedPlugin* first = load_plugin_file(real_plugin().toStdString(), &error);
    QVERIFY2(first != nullptr, error.c_str());
    const size_t count = loaded_plugins().size();
    // Every later lookup, by file or by search, returns the same plugin and loads nothing new.
    QCOMPARE(load_plugin_file(real_plugin().toStdString(), &error), first);
    QCOMPARE(load_attention_plugin_from({kBuildPluginDir.toStdString()}).plugin, first);
    QCOMPARE(load_plugin_file((kBuildPluginDir + QStringLiteral("/../plugins/libvidgraph_attention.so")).toStdString(),
                              &error), first);
    QCOMPARE(loaded_plugins().size(), count);
    // Even if something else closes the library as often as it was opened, it stays mapped
    // (RTLD_NODELETE) and the plugin keeps working.
    const QByteArray path = real_plugin().toUtf8();
    void* handle = dlopen(path.constData(), RTLD_NOW | RTLD_NOLOAD);
    QVERIFY2(handle != nullptr, "the plugin's library must be mapped");
    QCOMPARE(dlclose(handle), 0);
    QCOMPARE(dlclose(handle), 0);
    handle = dlopen(path.constData(), RTLD_NOW | RTLD_NOLOAD);
    QVERIFY2(handle != nullptr, "the plugin's library was unloaded");
    dlclose(handle);
    AttentionCall call;
    call.q = call.k = call.v = at::randn({1, 8, 1, 4}, at::kDouble);
    test_common::prepare_call(first->backend(), call, "vsa", {}, {1, 2, 4});
    QCOMPARE(first->backend().forward(call).sizes().vec(), call.q.sizes().vec());
  }

  void search_dirs_follow_the_documented_order() {
    // The variable is the front ends' to read: set here, the loader must not see it.
    qputenv("VIDGRAPH_PLUGIN_PATH", "/not/this/dir");
    const auto dirs = plugin_search_dirs({"/first/dir", "", "/second/dir"});
    qunsetenv("VIDGRAPH_PLUGIN_PATH");
    QVERIFY(dirs.size() >= 3);
    QCOMPARE(dirs[0], std::string("/first/dir"));
    QCOMPARE(dirs[1], std::string("/second/dir"));
    const std::string exe_plugins = QDir::cleanPath(QCoreApplication::applicationDirPath() +
                                                    QStringLiteral("/../lib/vidgraph/plugins")).toStdString();
    QCOMPARE(dirs[2], exe_plugins);
    // Beyond the given path, only folders next to the running program (no compile-time build
    // folder): here, in the build tree, that is the build's plugin folder.
    QCOMPARE(dirs[2], kBuildPluginDir.toStdString());
    const std::string exe_parent =
        QDir::cleanPath(QCoreApplication::applicationDirPath() + QStringLiteral("/..")).toStdString();
    for (size_t i = 2; i < dirs.size(); ++i)
      QVERIFY2(dirs[i].rfind(exe_parent + "/", 0) == 0, dirs[i].c_str());
  }

  void loads_from_the_given_plugin_path() {
    QTemporaryDir dir;
    QVERIFY(QFile::copy(real_plugin(), dir.filePath(QStringLiteral("libvidgraph_attention.so"))));
    qunsetenv("VIDGRAPH_PLUGIN_PATH");  // the path comes from the caller alone
    PluginLoadReport report = load_attention_plugin({dir.path().toStdString()});
    QVERIFY2(report.plugin != nullptr, report.message().c_str());
    QCOMPARE(QString::fromStdString(report.plugin->path()), dir.filePath(QStringLiteral("libvidgraph_attention.so")));
    QCOMPARE(report.searched.front(), dir.path().toStdString());
  }

  void failures_name_the_file_and_why_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("expected");
    QTest::newRow("ABI mismatch") << fixture("vg_fixture_bad_abi") << "plugin ABI version 999 does not match";
    QTest::newRow("previous ABI") << fixture("vg_fixture_old_abi")
                                  << QString("plugin ABI version %1 does not match the program's %2; rebuild "
                                             "the plugin")
                                         .arg(VIDGRAPH_PLUGIN_ABI_VERSION - 1)
                                         .arg(VIDGRAPH_PLUGIN_ABI_VERSION);
    QTest::newRow("LibTorch mismatch") << fixture("vg_fixture_bad_torch") << "built with LibTorch 0.1";
    QTest::newRow("missing symbol") << fixture("vg_fixture_no_entry") << "does not export 'vidgraph_plugin_entry'";
    QTest::newRow("throwing factory") << fixture("vg_fixture_throwing") << "factory failed: boom";
    QTest::newRow("missing file") << kFixtureDir + QStringLiteral("/libabsent.so") << "no such file";
  }
  void failures_name_the_file_and_why() {
    QFETCH(QString, file); QFETCH(QString, expected);
    const std::string error = load_error(file);
    QVERIFY2(contains(error, expected.toStdString()), error.c_str());
    QVERIFY2(contains(error, file.toStdString()), error.c_str());
  }

  void not_a_library_is_reported() {
    QTemporaryDir dir;
    QFile junk(dir.filePath(QStringLiteral("libjunk.so")));
    QVERIFY(junk.open(QIODevice::WriteOnly));
    junk.write("this is not an ELF file\n");
    junk.close();
    const std::string error = load_error(junk.fileName());
    QVERIFY2(contains(error, "dlopen failed"), error.c_str());
  }

  void scan_skips_bad_files_and_loads_the_good_one() {
    QTemporaryDir dir;
    QVERIFY(QFile::copy(fixture("vg_fixture_bad_abi"), dir.filePath(QStringLiteral("liba_bad.so"))));
    QVERIFY(QFile::copy(real_plugin(), dir.filePath(QStringLiteral("libz_good.so"))));
    PluginLoadReport report = load_attention_plugin_from({dir.path().toStdString()});
    QVERIFY2(report.plugin != nullptr, report.message().c_str());
    QCOMPARE(report.failures.size(), size_t(1));
    QVERIFY(contains(report.failures[0].path, "liba_bad.so"));
    // Asking for a name that no plugin has loads nothing.
    PluginLoadReport none = load_attention_plugin_from({dir.path().toStdString()}, "other");
    QVERIFY(none.plugin == nullptr);
  }

  void nothing_found_lists_places_and_reasons() {
    QTemporaryDir dir;
    QVERIFY(QFile::copy(fixture("vg_fixture_no_entry"), dir.filePath(QStringLiteral("libnot_plugin.so"))));
    const std::string missing = dir.filePath(QStringLiteral("missing")).toStdString();
    PluginLoadReport report = load_attention_plugin_from({missing, dir.path().toStdString()});
    QVERIFY(report.plugin == nullptr);
    const std::string msg = report.message();
    QVERIFY2(contains(msg, "no attention plugin found"), msg.c_str());
    QVERIFY2(contains(msg, missing) && contains(msg, dir.path().toStdString()), msg.c_str());
    QVERIFY2(contains(msg, "libnot_plugin.so") && contains(msg, "does not export"), msg.c_str());
  }

  void params_validate_and_parse() {
    MethodInfo m{"vsa", "", {}};
    ParamDescriptor s{"sparsity", ParamType::Float, 0.875, 0.0, 1.0, true, 0, {}, ""};
    ParamDescriptor t{"tile", ParamType::IntList, std::vector<int64_t>{4, 4, 4}, 1, 64, false, 3, {}, ""};
    ParamDescriptor f{"feature_map", ParamType::String, std::string("softmax"), 0, 0, false, 0, {"softmax", "elu"}, ""};
    m.params = {s, t, f};
    const ParamMap defaults = resolve_params(m, {});
    QCOMPARE(param_as_double(defaults, "sparsity"), 0.875);
    QCOMPARE(param_as_int_list(resolve_params(m, {{"tile", param_value_from_string(t, "2x4x8")}}), "tile"),
             (std::vector<int64_t>{2, 4, 8}));
    QCOMPARE(param_as_double(resolve_params(m, {{"sparsity", int64_t(0)}}), "sparsity"), 0.0);
    const auto error = [&](const ParamMap& given) {
      try {
        resolve_params(m, given);
      } catch (const std::invalid_argument& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    QVERIFY(contains(error({{"sparsity", 1.0}}), "must be in [0, 1)"));
    QVERIFY(contains(error({{"sparsity", std::string("x")}}), "must be a number"));
    QVERIFY(contains(error({{"tile", std::vector<int64_t>{4, 0, 4}}}), "values must be in [1, 64]"));
    QVERIFY(contains(error({{"feature_map", std::string("tanh")}}), "one of softmax, elu"));
    QVERIFY(contains(error({{"topk", int64_t(3)}}), "has no parameter 'topk'"));
    bool threw = false;
    try {
      param_value_from_string(s, "0.5abc");
    } catch (const std::invalid_argument& e) {
      threw = contains(e.what(), "cannot read '0.5abc'");
    }
    QVERIFY(threw);
  }
};

QTEST_GUILESS_MAIN(tst_plugin_loader)
#include "tst_plugin_loader.moc"

// Sequence parallelism over real processes: the suite spawns parallel_worker N times (a real Gloo
// process group over a real TCPStore on loopback) and checks that the DiT forward and its gradients
// equal the single-process run for full, vsa and sla_star with N = 2 and 3 on a sequence that
// divides by neither; that heads not divisible by N is a clear error; that a rank leaving makes the
// others stop with a message instead of hanging; that sequence-parallel training equals one process;
// and the torchrun environment parsing.
#include <ATen/TensorOperators.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>

#include "models/io/safetensors.h"
#include "models/parallel/process_group.h"
#include "parallel_case.h"
#include "plugins/api/plugin_loader.h"

#include <QtCore/QDir>
#include <QtCore/QElapsedTimer>
#include <QtCore/QFile>
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using namespace vidgraph;

namespace {

double rel_err(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  return (ad - bd).norm().item<double>() / std::max(bd.norm().item<double>(), 1e-30);
}

// A port the kernel just handed out on loopback (free now; the workers bind it right after).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

struct Ranks {
  std::vector<std::unique_ptr<QProcess>> procs;
};

// Starts `world` workers in `mode`; every one gets the same port and output folder.
Ranks spawn(const QString& mode, int world, const QString& out_dir, int timeout_s) {
  Ranks r;
  const int port = free_port();
  for (int rank = 0; rank < world; ++rank) {
    auto p = std::make_unique<QProcess>();
    p->start(VIDGRAPH_PARALLEL_WORKER, {mode, QString::number(rank), QString::number(world), QString::number(port),
                                        out_dir, QString::number(timeout_s)});
    r.procs.push_back(std::move(p));
  }
  return r;
}

// "" when every rank exits 0 within `timeout_ms`, else which did not and its stderr.
QString finish(Ranks& ranks, int timeout_ms) {
  for (size_t rank = 0; rank < ranks.procs.size(); ++rank) {
    QProcess& p = *ranks.procs[rank];
    if (!p.waitForFinished(timeout_ms)) return QString("rank %1 did not finish").arg(rank);
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
      return QString("rank %1: %2").arg(rank).arg(QString::fromUtf8(p.readAllStandardError()));
    }
  }
  return {};
}

const char* const kMethods[] = {"full", "vsa", "sla_star"};

}  // namespace

class tst_parallel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase();
  void cleanupTestCase();
  void matchesSingleProcess_data();
  void matchesSingleProcess();
  void fortyHeadsMatchOneProcess_data();
  void fortyHeadsMatchOneProcess();
  void trainingMatchesSingleProcess();
  void rankFailureStopsTheOthers();
  void torchrunEnvironment();
  void torchrunAgentStore();
  void unknownBackendIsAClearError();

 private:
  std::map<std::string, parallel_case::Result> reference_;
};

void tst_parallel::initTestCase() {
  const std::vector<std::string> backends = parallel::available_backends();
  if (std::find(backends.begin(), backends.end(), "gloo") == backends.end()) {
    QSKIP("This LibTorch build has no Gloo backend (pip's torch ships without Gloo's headers), which the "
          "multi-process CPU cases need; Debian's LibTorch has it.");
  }
  auto report = plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin != nullptr, report.message().c_str());
  try {
    for (const char* method : kMethods) {
      reference_[method] = parallel_case::run(method, &report.plugin->backend(), nullptr);
    }
  } catch (const std::exception& e) {
    QFAIL(e.what());
  }
  // The sparse selection really drops tiles at this size: the three methods differ.
  QVERIFY(rel_err(reference_["vsa"].out, reference_["full"].out) > 1e-3);
  QVERIFY(rel_err(reference_["sla_star"].out, reference_["vsa"].out) > 1e-3);
}

void tst_parallel::cleanupTestCase() { reference_.clear(); }

void tst_parallel::matchesSingleProcess_data() {
  QTest::addColumn<int>("world");
  QTest::newRow("2 processes") << 2;
  QTest::newRow("3 processes") << 3;
}

void tst_parallel::matchesSingleProcess() {
  QFETCH(int, world);
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  Ranks ranks = spawn("dit", world, dir.path(), 60);
  if (const QString problem = finish(ranks, 120000); !problem.isEmpty()) QFAIL(qPrintable(problem));
  double worst = 0.0;
  for (const char* method : kMethods) {
    const auto file = model_io::SafetensorsFile::open(dir.filePath(QString(method) + ".safetensors").toStdString());
    const parallel_case::Result& want = reference_[method];
    const std::pair<const char*, at::Tensor> parts[] = {
        {"out", want.out}, {"x_grad", want.x_grad}, {"param_grads", want.param_grads}};
    for (const auto& [name, expected] : parts) {
      const at::Tensor got = file.load(name);
      QCOMPARE(got.sizes().vec(), expected.sizes().vec());
      const double err = rel_err(got, expected);
      QVERIFY2(err < 1e-5, qPrintable(QString("%1 %2: rel-L2 %3").arg(method, name).arg(err)));
      worst = std::max(worst, err);
    }
  }
  qInfo("%d processes: worst rel-L2 against one process %.3g (output, input and parameter gradients)", world, worst);
  QFile heads(dir.filePath("heads_error.txt"));
  QVERIFY(heads.open(QIODevice::ReadOnly));
  const QString message = QString::fromUtf8(heads.readAll());
  QVERIFY2(message.contains(QString("splits the %1 attention heads over %2 processes").arg(world + 1).arg(world)),
           qPrintable(message));
}

// Wan2.2-A14B's 40 heads split over 4, 5 and 8 processes (the counts that divide them beyond 2): the
// output and every gradient equal one process's.
void tst_parallel::fortyHeadsMatchOneProcess_data() {
  QTest::addColumn<int>("world");
  QTest::newRow("4 processes") << 4;
  QTest::newRow("5 processes") << 5;
  QTest::newRow("8 processes") << 8;
}

void tst_parallel::fortyHeadsMatchOneProcess() {
  QFETCH(int, world);
  static const parallel_case::Result want = parallel_case::run("full", nullptr, nullptr, 40);
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  Ranks ranks = spawn("heads40", world, dir.path(), 120);
  if (const QString problem = finish(ranks, 240000); !problem.isEmpty()) QFAIL(qPrintable(problem));
  const auto file = model_io::SafetensorsFile::open(dir.filePath("heads40.safetensors").toStdString());
  double worst = 0.0;
  for (const auto& [name, expected] : {std::pair<const char*, at::Tensor>{"out", want.out},
                                       {"x_grad", want.x_grad}, {"param_grads", want.param_grads}}) {
    const at::Tensor got = file.load(name);
    QCOMPARE(got.sizes().vec(), expected.sizes().vec());
    const double err = rel_err(got, expected);
    QVERIFY2(err < 1e-5, qPrintable(QString("%1: rel-L2 %2").arg(name).arg(err)));
    worst = std::max(worst, err);
  }
  qInfo("40 heads over %d processes: worst rel-L2 against one process %.3g", world, worst);
}

// Sequence-parallel training over 2 ranks: every step's loss and the trained adapters and gates
// equal one process's, with and without gradient checkpointing (whose recomputation repeats the
// all-to-alls inside the backward); a cancel on rank 1 alone stops both ranks at the same step and
// only rank 0 writes the resumable checkpoint.
void tst_parallel::trainingMatchesSingleProcess() {
  auto report = plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin != nullptr, report.message().c_str());
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  Ranks ranks = spawn("train", 2, dir.path(), 60);
  if (const QString problem = finish(ranks, 180000); !problem.isEmpty()) QFAIL(qPrintable(problem));
  at::Tensor three_steps;
  for (const bool checkpointing : {false, true}) {
    const parallel_case::TrainOutcome want =
        parallel_case::train("vsa", &report.plugin->backend(), nullptr, checkpointing);
    if (!checkpointing) three_steps = want.trained;
    QCOMPARE(want.losses.numel(), int64_t(3));
    const auto file = model_io::SafetensorsFile::open(
        dir.filePath(QString("train-%1.safetensors").arg(int(checkpointing))).toStdString());
    const double loss_err = rel_err(file.load("losses"), want.losses);
    const double weight_err = rel_err(file.load("trained"), want.trained);
    qInfo("training, checkpointing %d: losses rel-L2 %.3g, trained weights %.3g (losses %.5f %.5f %.5f)",
          int(checkpointing), loss_err, weight_err, want.losses[0].item<double>(), want.losses[1].item<double>(),
          want.losses[2].item<double>());
    QVERIFY2(loss_err < 1e-5, qPrintable(QString("losses rel-L2 %1").arg(loss_err)));
    QVERIFY2(weight_err < 1e-5, qPrintable(QString("trained weights rel-L2 %1").arg(weight_err)));
  }
  // The steps move the weights: after one step they are not the three steps' weights.
  const at::Tensor one_step = parallel_case::train("vsa", &report.plugin->backend(), nullptr, false, 2).trained;
  QVERIFY(rel_err(one_step, three_steps) > 1e-4);
  for (int rank = 0; rank < 2; ++rank) {
    QFile f(dir.filePath(QString("cancel-%1.txt").arg(rank)));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList fields = QString::fromUtf8(f.readAll()).split(' ');
    QCOMPARE(fields.size(), 3);
    QCOMPARE(fields[0], QString("1"));  // cancelled
    QCOMPARE(fields[1], QString("1"));  // after step 1, on both ranks
    QCOMPARE(fields[2] == "-", rank != 0);
  }
  QCOMPARE(QDir(dir.filePath("ckpt")).entryList(QDir::Files).size(), 1);
}

void tst_parallel::rankFailureStopsTheOthers() {
  QTemporaryDir dir;
  QElapsedTimer clock;
  clock.start();
  Ranks ranks = spawn("fail", 2, dir.path(), 20);
  QVERIFY(ranks.procs[1]->waitForFinished(60000));
  QCOMPARE(ranks.procs[1]->exitCode(), 3);
  QVERIFY2(ranks.procs[0]->waitForFinished(60000), "rank 0 hung after rank 1 left");
  const QString err = QString::fromUtf8(ranks.procs[0]->readAllStandardError());
  QCOMPARE(ranks.procs[0]->exitCode(), 1);
  QVERIFY2(err.contains("The all-to-all on rank 0 of 2 failed"), qPrintable(err));
  QVERIFY2(clock.elapsed() < 40000, qPrintable(QString("took %1 ms").arg(clock.elapsed())));
}

// torchrun's variables as a front end passes them (engine::read_environment); the models layer
// never reads the environment itself: a WORLD_SIZE set here changes nothing.
void tst_parallel::torchrunEnvironment() {
  qputenv("WORLD_SIZE", "8");
  QVERIFY(!parallel::process_group_options_from_torchrun({}).has_value());
  qunsetenv("WORLD_SIZE");
  std::map<std::string, std::string> vars{{"WORLD_SIZE", "4"},       {"RANK", "3"},
                                          {"LOCAL_RANK", "1"},       {"MASTER_ADDR", "10.0.0.7"},
                                          {"MASTER_PORT", "29600"}};
  const auto o = parallel::process_group_options_from_torchrun(vars);
  QVERIFY(o.has_value());
  QCOMPARE(o->world_size, 4);
  QCOMPARE(o->rank, 3);
  QCOMPARE(o->local_rank, 1);
  QCOMPARE(o->master_addr, std::string("10.0.0.7"));
  QCOMPARE(o->master_port, 29600);
  QVERIFY(o->gloo_interface.empty());
  vars["RANK"] = "4";  // outside the world
  try {
    parallel::process_group_options_from_torchrun(vars);
    QFAIL("expected an error for RANK=4 with WORLD_SIZE=4");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(std::string(e.what()).find("RANK='4'") != std::string::npos, e.what());
  }
  QVERIFY(!o->launcher_hosts_store);
  vars["RANK"] = "3";
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  vars["GLOO_SOCKET_IFNAME"] = "eth1";
  const auto agent = parallel::process_group_options_from_torchrun(vars);
  QVERIFY(agent->launcher_hosts_store);
  QCOMPARE(agent->gloo_interface, std::string("eth1"));
}

// torchrun's agent serves the store on MASTER_PORT itself and tells its workers so: rank 0 must
// join that store (hosting its own on the taken port fails), and the job gives one process's result.
void tst_parallel::torchrunAgentStore() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const int port = free_port();
  QProcess agent;
  agent.start(VIDGRAPH_PARALLEL_WORKER, {"store", "0", "1", QString::number(port), dir.path(), "60"});
  QVERIFY(agent.waitForStarted());
  QTest::qWait(500);  // the store is listening
  Ranks ranks;
  for (int rank = 0; rank < 2; ++rank) {
    auto p = std::make_unique<QProcess>();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("WORLD_SIZE", "2");
    env.insert("RANK", QString::number(rank));
    env.insert("MASTER_ADDR", "127.0.0.1");
    env.insert("MASTER_PORT", QString::number(port));
    env.insert("TORCHELASTIC_USE_AGENT_STORE", "True");
    p->setProcessEnvironment(env);
    p->start(VIDGRAPH_PARALLEL_WORKER, {"agent", "0", "1", "1", dir.path(), "60"});
    ranks.procs.push_back(std::move(p));
  }
  if (const QString problem = finish(ranks, 120000); !problem.isEmpty()) QFAIL(qPrintable(problem));
  agent.closeWriteChannel();
  QVERIFY(agent.waitForFinished(10000));
  const auto file = model_io::SafetensorsFile::open(dir.filePath("full.safetensors").toStdString());
  const double err = rel_err(file.load("out"), reference_["full"].out);
  QVERIFY2(err < 1e-5, qPrintable(QString("rel-L2 %1").arg(err)));
}

void tst_parallel::unknownBackendIsAClearError() {
  parallel::ProcessGroupOptions o;
  o.backend = "mpi";
  try {
    parallel::ProcessGroupHandle::create(o);
    QFAIL("expected an error for backend mpi");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(std::string(e.what()).find("Unknown distributed backend 'mpi'") != std::string::npos, e.what());
  }
  if (!at::hasCUDA()) {
    o.backend = "nccl";
    try {
      parallel::ProcessGroupHandle::create(o);
      QFAIL("expected an error for nccl without NCCL");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("no nccl backend") != std::string::npos, e.what());
    }
  }
}

QTEST_GUILESS_MAIN(tst_parallel)
#include "tst_parallel.moc"

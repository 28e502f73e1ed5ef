// vidgraph-run as several processes on the demo workflow (tiny generated model, Gloo on loopback,
// real processes): `--nproc 2` and a torchrun-style pair of processes write the same frames as one
// process and nothing else, with the VAE's tiles split over the ranks too, and the fine-tuning
// workflow trains sequence-parallel with one process's losses; heads that do not divide over the
// ranks are a validation error before any model loads; a rank killed mid-run ends the job quickly
// with a message naming it; Ctrl-C to the launcher exits 130 with no partial files. Compared against one process, never against fixed
// values, so the test holds for any demo weights.
#include <signal.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <QtCore/QElapsedTimer>
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include "nodes/media/image_io.h"
#include "process_run.h"
#include "run_launch.h"

namespace fs = std::filesystem;
namespace media = vidgraph::nodes::media;

namespace {

const QString kBinary = QStringLiteral(VIDGRAPH_BINARY_DIR);
const QString kRunner = kBinary + "/bin/vidgraph-run";
const QString kDemo = kBinary + "/share/vidgraph/workflows/demo.vgflow";

// The demo cut short, exporting PNG frames (exact pixels, no codec in the comparison).
// The demo workflow on the seeded tiny model (2 attention heads: splits over 1 or 2 ranks only).
QStringList frames_args(const QString& out) {
  return {"run", kDemo, "--output-dir", out, "--set", "model.model_path={resources}/models/wan22-tiny",
          "--set", "sampler.steps=2", "--set", "sampler.frames=5",
          "--set", "export.format=png", "--set", "export.filename={output}/frames"};
}

using RunOutcome = test_common::ProcessOutcome;

// Each process gets `tmp` as TMPDIR, so the test sees any scratch folder a rank leaves behind.
void start(QProcess& p, const QStringList& args, const QString& tmp, const QStringList& env = {}) {
  QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
  e.insert("TMPDIR", tmp);
  for (const QString& kv : env) e.insert(kv.section('=', 0, 0), kv.section('=', 1));
  p.setProcessEnvironment(e);
  p.start(kRunner, args);
}

RunOutcome finish(QProcess& p, int timeout_ms = 240000) {
  return test_common::finish_process(p, timeout_ms);
}

RunOutcome run(const QStringList& args, const QString& tmp) {
  QProcess p;
  start(p, args, tmp);
  return finish(p);
}

// True when `dir` holds no output: nothing, or only the run history (a failed or cancelled run is a
// line of it).
bool holds_no_output(const QString& dir) {
  for (const auto& e : fs::directory_iterator(dir.toStdString())) {
    if (e.path().filename() != "vidgraph-history.jsonl") return false;
  }
  return true;
}

std::vector<std::string> tree_of(const QString& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir.toStdString())) {
    names.push_back(fs::relative(e.path(), dir.toStdString()).generic_string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The largest per-channel difference between the PNG frames of two output folders (-1: not the
// same files or sizes). `frames` gets how many were compared.
int worst_pixel_difference(const QString& a_dir, const QString& b_dir, int* frames) {
  if (tree_of(a_dir) != tree_of(b_dir)) return -1;
  int worst = 0;
  *frames = 0;
  for (const std::string& name : tree_of(a_dir)) {
    if (fs::path(name).extension() != ".png") continue;
    vidgraph::nodes::Image a, b;
    std::string error;
    if (!media::load_image(a_dir.toStdString() + "/" + name, &a, &error) ||
        !media::load_image(b_dir.toStdString() + "/" + name, &b, &error) || a.width != b.width ||
        a.height != b.height || a.rgb.size() != b.rgb.size()) {
      return -1;
    }
    for (std::size_t i = 0; i < a.rgb.size(); ++i) worst = std::max(worst, std::abs(int(a.rgb[i]) - int(b.rgb[i])));
    ++*frames;
  }
  return worst;
}

std::vector<nlohmann::json> json_lines(const QString& text) {
  std::vector<nlohmann::json> lines;
  for (const QString& line : text.split('\n', Qt::SkipEmptyParts)) {
    lines.push_back(nlohmann::json::parse(line.toStdString(), nullptr, false));
  }
  return lines;
}

// Train Wan's step losses among a run's JSON events.
std::vector<double> train_losses(const QString& out) {
  std::vector<double> losses;
  for (const auto& e : json_lines(out)) {
    if (e.is_object() && e.value("event", "") == "node_progress" && e.value("node", "") == "train" &&
        e.contains("metrics")) {
      losses.push_back(e["metrics"]["loss"].get<double>());
    }
  }
  return losses;
}

// "" when a run over two ranks trained the one-process run's 3 steps to the same losses (within 1e-5
// relative, the gradient sums' rounding); else what differs.
QString losses_differ(const QString& one_process, const QString& two_ranks) {
  const std::vector<double> want = train_losses(one_process), got = train_losses(two_ranks);
  if (want.size() != 3 || got.size() != want.size()) {
    return QString("%1 and %2 step losses, 3 expected").arg(want.size()).arg(got.size());
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= 1e-5 * std::abs(want[i]))) {
      return QString("step %1: loss %2 against %3").arg(i + 1).arg(got[i], 0, 'g', 9).arg(want[i], 0, 'g', 9);
    }
  }
  return {};
}

// Reads `p`'s JSON events until the sampler reports progress (or 240 s pass, or it exits).
bool wait_for_sampling(QProcess& p, QString& seen) {
  QElapsedTimer timer;
  timer.start();
  while (timer.elapsed() < 240000 && p.state() == QProcess::Running) {
    p.waitForReadyRead(200);
    seen += QString::fromUtf8(p.readAllStandardOutput());
    for (const auto& e : json_lines(seen)) {
      if (e.is_object() && e.value("event", "") == "node_progress" && e.value("node", "") == "sampler") return true;
    }
  }
  return false;
}

// The pid of the child of `parent` whose environment has RANK=`rank`, or 0.
pid_t rank_pid(pid_t parent, int rank) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream env_file(entry.path() / "environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(env_file)), std::istreambuf_iterator<char>());
    if (env.find(std::string("\0RANK=", 6) + std::to_string(rank) + '\0') != std::string::npos ||
        env.rfind("RANK=" + std::to_string(rank) + '\0', 0) == 0) {
      return static_cast<pid_t>(std::stol(name));
    }
  }
  return 0;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace

class tst_parallel_run : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void twoRanksWriteTheSameFrames();
  void tiledDecodeIsShared();
  void fineTuningOverTwoRanks();
  void imageConditionedTrainingOverTwoRanks();
  void torchrunEnvironmentIsHonoured();
  void headsNotDividingIsAValidationError();
  void killedRankEndsTheJob_data();
  void killedRankEndsTheJob();
  void ctrlCCancelsEveryRank();
  void eachRankTakesItsGpu();

 private:
  QTemporaryDir one_;  // the one-process frames every parallel run is compared with
  QTemporaryDir tmp_;  // TMPDIR of every process: ranks' scratch folders must not stay
};

void tst_parallel_run::initTestCase() {
  QVERIFY2(QFile::exists(kRunner), qPrintable(kRunner + " is not built"));
  QVERIFY2(QFile::exists(kDemo), qPrintable(kDemo + " is not staged"));
  const RunOutcome r = run(frames_args(one_.path()), tmp_.path());
  QVERIFY2(r.exit_code == 0, qPrintable(r.out.right(2000) + r.err));
}

void tst_parallel_run::twoRanksWriteTheSameFrames() {
  QTemporaryDir two;
  const RunOutcome r = run(QStringList(frames_args(two.path())) << "--nproc" << "2" << "--json-events", tmp_.path());
  QVERIFY2(r.exit_code == 0, qPrintable(r.out.right(2000) + r.err));
  QVERIFY2(r.err.contains("rank 0 of 2 joined the gloo process group"), qPrintable(r.err));
  int frames = 0;
  const int worst = worst_pixel_difference(one_.path(), two.path(), &frames);
  QVERIFY2(worst >= 0, "the two runs wrote different files");
  QVERIFY2(worst <= 1, qPrintable("a pixel differs by " + QString::number(worst)));
  QCOMPARE(frames, 5);
  // stdout is rank 0's alone: one run, one summary, every line JSON; the sampler did split the DiT.
  // The prompt was encoded once, on rank 0, and sent to rank 1.
  int summaries = 0, starts = 0, split = 0, sent = 0;
  for (const auto& e : json_lines(r.out)) {
    QVERIFY2(e.is_object(), "every stdout line is JSON");
    summaries += e.value("event", "") == "summary";
    starts += e.value("event", "") == "run_started";
    split += e.value("message", "").find("sequence-parallel over 2 processes, 1 attention heads each") !=
             std::string::npos;
    sent += e.value("message", "") == "Encoded the prompt once and sent it to the other ranks.";
  }
  QCOMPARE(summaries, 1);
  QCOMPARE(starts, 1);
  QCOMPARE(split, 1);
  QCOMPARE(sent, 1);
  QVERIFY2(fs::is_empty(tmp_.path().toStdString()), "rank 1's scratch folder was removed");
}

// The demo at 320 x 192 with its decode tiled into 6 tiles (tile 8 of a 12 x 20 latent, overlap 2),
// in one process and over 2 ranks (3 tiles each, blended by rank 0): the same frames, and rank 0
// says it shared them.
void tst_parallel_run::tiledDecodeIsShared() {
  const QStringList tiled{"--set", "image.width=320", "--set", "image.height=192", "--set", "decode.tiling=true",
                          "--set", "decode.tile_size=8", "--set", "decode.tile_overlap=2"};
  QTemporaryDir one, two;
  const RunOutcome r1 = run(QStringList(frames_args(one.path())) << tiled, tmp_.path());
  QVERIFY2(r1.exit_code == 0, qPrintable(r1.out.right(2000) + r1.err));
  const RunOutcome r2 = run(QStringList(frames_args(two.path())) << tiled << "--nproc" << "2" << "--json-events",
                            tmp_.path());
  QVERIFY2(r2.exit_code == 0, qPrintable(r2.out.right(2000) + r2.err));
  QVERIFY2(r2.out.contains("The tiled decode is shared by 2 ranks."), qPrintable(r2.out.right(3000)));
  int frames = 0;
  const int worst = worst_pixel_difference(one.path(), two.path(), &frames);
  QVERIFY2(worst >= 0 && worst <= 1, qPrintable("a pixel differs by " + QString::number(worst)));
  QCOMPARE(frames, 5);
  qInfo("tiled decode over 2 ranks against one process: worst pixel difference %d", worst);
  // The tiles are really blended: the tiled frames are not the untiled ones.
  QTemporaryDir untiled;
  const QStringList large{"--set", "image.width=320", "--set", "image.height=192"};
  QCOMPARE(run(QStringList(frames_args(untiled.path())) << large, tmp_.path()).exit_code, 0);
  QVERIFY(worst_pixel_difference(untiled.path(), one.path(), &frames) > 1);
  QVERIFY2(fs::is_empty(tmp_.path().toStdString()), "rank 1's scratch folder was removed");
}

// The shipped fine-tuning workflow, shortened, over 2 ranks: rank 0 encodes the dataset and sends
// it, both ranks train sequence-parallel, every step's loss equals one process's, the sampler with
// the trained LoRA writes the same frames, and rank 0 alone writes files (the same file tree). Both
// runs train on one demo dataset made beforehand: its clips are not bit-identical from run to run.
void tst_parallel_run::fineTuningOverTwoRanks() {
  const QString flow = kBinary + "/share/vidgraph/workflows/finetune-demo.vgflow";
  QTemporaryDir dataset;
  const QString folder = dataset.filePath("clips");
  auto args = [&](const QString& out) {
    return QStringList{"run", flow, "--output-dir", out, "--json-events", "--set", "train.steps=3",
                       "--set", "train.warmup=0", "--set", "make_dataset.clips=2", "--set",
                       "make_dataset.folder=" + folder, "--set", "sampler.steps=2",
                       "--set", "export.format=png", "--set", "export.filename={output}/frames"};
  };
  const RunOutcome made = run(QStringList(args(dataset.path())) << "--target" << "make_dataset", tmp_.path());
  QVERIFY2(made.exit_code == 0, qPrintable(made.out.right(2000) + made.err));
  QTemporaryDir one, two;
  const RunOutcome r1 = run(args(one.path()), tmp_.path());
  QVERIFY2(r1.exit_code == 0, qPrintable(r1.out.right(2000) + r1.err));
  const RunOutcome r2 = run(args(two.path()) << "--nproc" << "2", tmp_.path());
  QVERIFY2(r2.exit_code == 0, qPrintable(r2.out.right(2000) + r2.err));
  QVERIFY2(r2.out.contains("Training runs sequence-parallel over 2 processes."), qPrintable(r2.out.right(3000)));
  QVERIFY2(r2.out.contains("Sent the training set's 2 samples to the other ranks."), qPrintable(r2.out.right(3000)));
  const QString differ = losses_differ(r1.out, r2.out);
  QVERIFY2(differ.isEmpty(), qPrintable(differ));
  const std::vector<double> want = train_losses(r1.out), got = train_losses(r2.out);
  qInfo("losses over 2 ranks %.7f %.7f %.7f, one process %.7f %.7f %.7f", got[0], got[1], got[2], want[0], want[1],
        want[2]);
  QCOMPARE(tree_of(two.path()), tree_of(one.path()));
  int frames = 0;
  const int worst = worst_pixel_difference(one.path() + "/frames", two.path() + "/frames", &frames);
  QVERIFY2(worst >= 0 && worst <= 1, qPrintable("a pixel differs by " + QString::number(worst)));
  QCOMPARE(frames, 9);
  QVERIFY2(fs::is_empty(tmp_.path().toStdString()), "rank 1's scratch folder was removed");
}

// The same workflow up to Train Wan on the tiny random Wan2.2-I2V-A14B with i2v samples: rank 0 sends
// samples that carry their image conditioning (rank 1 would refuse to train without it) and both
// ranks train to one process's losses.
void tst_parallel_run::imageConditionedTrainingOverTwoRanks() {
  const QString maker = kBinary + "/bin/vidgraph-make-random-model";
  if (!QFileInfo::exists(maker)) QSKIP("vidgraph-make-random-model is not built");
  QTemporaryDir model, dataset;
  const auto made = test_common::run_process(maker, {model.path(), "--config", "a14b-i2v", "--tiny", "--tokenizer",
                                                     kBinary + "/share/vidgraph/models/wan22-tiny/spiece.model"},
                                             120000);
  QVERIFY2(made.exit_code == 0, qPrintable(made.err));
  auto args = [&](const QString& out) {
    return QStringList{"run", kBinary + "/share/vidgraph/workflows/finetune-demo.vgflow", "--output-dir", out,
                       "--json-events", "--target", "train", "--set", "train.steps=3", "--set", "train.warmup=0",
                       "--set", "make_dataset.clips=2", "--set", "make_dataset.folder=" + dataset.filePath("clips"),
                       "--set", "model.model_path=" + model.path(), "--set", "encode_dataset.mode=i2v"};
  };
  QTemporaryDir one, two;
  const RunOutcome r1 = run(args(one.path()), tmp_.path());
  QVERIFY2(r1.exit_code == 0, qPrintable(r1.out.right(2000) + r1.err));
  const RunOutcome r2 = run(args(two.path()) << "--nproc" << "2", tmp_.path());
  QVERIFY2(r2.exit_code == 0, qPrintable(r2.out.right(2000) + r2.err));
  QVERIFY2(r2.out.contains("Sent the training set's 2 samples to the other ranks."), qPrintable(r2.out.right(3000)));
  const QString differ = losses_differ(r1.out, r2.out);
  QVERIFY2(differ.isEmpty(), qPrintable(differ));
}

// Two processes started by hand with torchrun's variables form one job; rank 1 writes nothing.
void tst_parallel_run::torchrunEnvironmentIsHonoured() {
  QTemporaryDir out0, out1;
  const QString port = QString::number(free_port());
  QProcess rank0, rank1;
  const QStringList common{"WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port};
  start(rank0, frames_args(out0.path()), tmp_.path(), QStringList(common) << "RANK=0" << "LOCAL_RANK=0");
  start(rank1, frames_args(out1.path()), tmp_.path(), QStringList(common) << "RANK=1" << "LOCAL_RANK=1");
  const RunOutcome r0 = finish(rank0), r1 = finish(rank1);
  QVERIFY2(r0.exit_code == 0, qPrintable(r0.err));
  QVERIFY2(r1.exit_code == 0, qPrintable(r1.err));
  QVERIFY2(r0.err.contains("rank 0 of 2 joined the gloo process group"), qPrintable(r0.err));
  QVERIFY2(r0.out.contains("sequence-parallel over 2 processes"), qPrintable(r0.out.right(3000)));
  QVERIFY2(r1.out.contains("The text encoder was not loaded on this rank"), qPrintable(r1.out.right(3000)));
  QVERIFY2(!r0.out.contains("The text encoder was not loaded"), qPrintable(r0.out.right(3000)));
  int frames = 0;
  const int worst = worst_pixel_difference(one_.path(), out0.path(), &frames);
  QVERIFY2(worst >= 0 && worst <= 1, qPrintable("rank 0's frames differ: " + QString::number(worst)));
  QCOMPARE(frames, 5);
  QVERIFY2(fs::is_empty(out1.path().toStdString()), "rank 1 wrote into its output folder");
  QVERIFY2(fs::is_empty(tmp_.path().toStdString()), "rank 1's scratch folder was removed");
}

// The tiny DiT has 2 heads: 4 ranks cannot split them. Exit 2 before the model loads.
void tst_parallel_run::headsNotDividingIsAValidationError() {
  QTemporaryDir out;
  const RunOutcome r = run(QStringList(frames_args(out.path())) << "--nproc" << "4", tmp_.path());
  QVERIFY2(r.exit_code == 2, qPrintable(QString::number(r.exit_code) + ": " + r.out.right(2000) + r.err));
  QVERIFY2(r.err.contains("attention heads, which do not divide over 4 processes"), qPrintable(r.err));
  QVERIFY2(r.err.contains("run with 1, 2 processes"), qPrintable(r.err));
  QCOMPARE(r.err.count("do not divide"), 1);  // rank 0 speaks for the job
  QVERIFY2(!r.out.contains("started"), qPrintable("a node ran: " + r.out));
  QVERIFY2(fs::is_empty(out.path().toStdString()), "an invalid run leaves nothing");
}

void tst_parallel_run::killedRankEndsTheJob_data() {
  QTest::addColumn<int>("victim");
  QTest::newRow("rank 1") << 1;
  QTest::newRow("rank 0 (hosts the store)") << 0;
}

// SIGKILL to one rank while it samples: the job ends well within 60 s, naming that rank; the other
// rank's own error reaches stderr (a rank above 0 prints on stderr even with --json-events).
void tst_parallel_run::killedRankEndsTheJob() {
  QFETCH(int, victim);
  const int other = 1 - victim;
  QTemporaryDir out;
  QProcess launcher;
  start(launcher, {"run", kDemo, "--output-dir", out.path(), "--nproc", "2", "--json-events", "--dist-timeout", "20",
                   "--set", "sampler.steps=1000", "--set", "sampler.frames=5"},
        tmp_.path());
  QVERIFY(launcher.waitForStarted());
  QString seen;
  QVERIFY2(wait_for_sampling(launcher, seen), qPrintable("never saw sampler progress: " + seen.right(2000)));
  const pid_t pid = rank_pid(static_cast<pid_t>(launcher.processId()), victim);
  QVERIFY2(pid > 0, "the rank's process was not found");
  QElapsedTimer timer;
  timer.start();
  ::kill(pid, SIGKILL);
  const RunOutcome r = finish(launcher, 60000);
  QVERIFY2(r.exit_code == 3, qPrintable(QString::number(r.exit_code) + ": " + r.err));
  QVERIFY2(timer.elapsed() < 60000, qPrintable(QString::number(timer.elapsed()) + " ms"));
  const QString verdict = QString("rank %1 of 2 was killed by signal 9").arg(victim);
  QVERIFY2(r.err.contains(verdict), qPrintable(r.err));
  const auto lines = json_lines(seen + r.out);  // --json-events: the launcher's verdict is the last line
  QVERIFY(!lines.empty());
  QCOMPARE(lines.back().value("event", ""), std::string("error"));
  QVERIFY2(QString::fromStdString(lines.back().value("message", "")).contains(verdict), lines.back().dump().c_str());
  const QString other_error = QString("on rank %1 of 2 failed").arg(other);
  QVERIFY2((other == 0 ? seen + r.out : r.err).contains(other_error), qPrintable(r.err + r.out.right(2000)));
  QVERIFY2(holds_no_output(out.path()), "the failed job left a file");
  // A killed rank 1 cannot remove its scratch folder; the launcher removed the job's TMPDIR.
  QVERIFY2(fs::is_empty(tmp_.path().toStdString()), "a rank's scratch folder stayed");
  qInfo("the job ended %lld ms after rank %d was killed", static_cast<long long>(timer.elapsed()), victim);
}

void tst_parallel_run::ctrlCCancelsEveryRank() {
  QTemporaryDir out;
  QProcess launcher;
  start(launcher, {"run", kDemo, "--output-dir", out.path(), "--nproc", "2", "--json-events", "--set",
                   "sampler.steps=1000", "--set", "sampler.frames=5"},
        tmp_.path());
  QVERIFY(launcher.waitForStarted());
  QString seen;
  QVERIFY2(wait_for_sampling(launcher, seen), qPrintable("never saw sampler progress: " + seen.right(2000)));
  const pid_t rank1 = rank_pid(static_cast<pid_t>(launcher.processId()), 1);
  QVERIFY2(rank1 > 0, "rank 1's process was not found");
  ::kill(static_cast<pid_t>(launcher.processId()), SIGINT);
  const RunOutcome r = finish(launcher, 60000);
  QVERIFY2(r.exit_code == 130, qPrintable(QString::number(r.exit_code) + ": " + r.err));
  QVERIFY2(holds_no_output(out.path()), "a cancelled run leaves no output file");
  QVERIFY2(fs::is_empty(tmp_.path().toStdString()), "rank 1's scratch folder was removed");
  QVERIFY2(::kill(rank1, 0) != 0, "rank 1 is still running");
}

// The GPU choice of a rank, from LOCAL_RANK (else RANK) and CUDA_VISIBLE_DEVICES, as the launcher's
// and torchrun's ranks make it before CUDA starts. Last: it edits this process's environment.
void tst_parallel_run::eachRankTakesItsGpu() {
  struct Case {
    const char* rank;
    const char* local_rank;
    const char* visible;  // nullptr: unset
    std::string expected_visible;
    std::string expected_error;
  };
  const Case cases[] = {
      {"3", "3", nullptr, "3", ""},              // unset: GPU LOCAL_RANK
      {"1", "1", "4,5,6", "5", ""},              // the LOCAL_RANK-th of the list
      {"5", "1", "4,5,6", "5", ""},              // LOCAL_RANK, not RANK (several machines)
      {"1", nullptr, "2,3", "3", ""},            // no LOCAL_RANK: RANK
      {"2", "2", "7", "7", ""},                  // one GPU given by a wrapper: kept
      {"1", "1", "", "", ""},                    // no GPU at all: kept
      {"2", "2", "0,1", "0,1", "local rank 2 has no GPU: CUDA_VISIBLE_DEVICES='0,1' lists 2"},
  };
  for (const Case& c : cases) {
    // The torchrun values as run_cli_main passes them; the result lands in this process's environment.
    vidgraph::engine::Environment env;
    env.torchrun["RANK"] = c.rank;
    if (c.local_rank) env.torchrun["LOCAL_RANK"] = c.local_rank;
    if (c.visible) env.cuda_visible_devices = c.visible;
    if (c.visible) ::setenv("CUDA_VISIBLE_DEVICES", c.visible, 1); else ::unsetenv("CUDA_VISIBLE_DEVICES");
    const std::string error = vidgraph::cli::rank_gpu_visibility(env);
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const QString label = QString("RANK=%1 LOCAL_RANK=%2 CUDA_VISIBLE_DEVICES=%3")
                              .arg(c.rank, c.local_rank ? c.local_rank : "-", c.visible ? c.visible : "-");
    QVERIFY2(visible != nullptr && visible == c.expected_visible, qPrintable(label + " -> " + (visible ? visible : "-")));
    if (c.expected_error.empty()) {
      QVERIFY2(error.empty(), qPrintable(label + ": " + QString::fromStdString(error)));
    } else {
      QVERIFY2(error.find(c.expected_error) != std::string::npos, qPrintable(label + ": " + QString::fromStdString(error)));
    }
  }
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

QTEST_GUILESS_MAIN(tst_parallel_run)
#include "tst_parallel_run.moc"

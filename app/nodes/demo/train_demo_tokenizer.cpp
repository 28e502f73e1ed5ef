// vidgraph-train-demo-tokenizer: trains the tiny demo model's SentencePiece unigram tokenizer on
// resources/demo/corpus.txt, deterministically (one thread, no sampling or shuffling, identity
// normalisation that keeps the file small), with umT5's special ids (pad 0, eos 1, unk 2, no bos).
// A program of its own, apart from vidgraph-make-demo-model: libsentencepiece's bundled protobuf
// must not share a process with LibTorch's.
// Usage: vidgraph-train-demo-tokenizer CORPUS.txt OUT_DIR   (writes OUT_DIR/spiece.model)
#include <filesystem>
#include <iostream>
#include <string>

#include <sentencepiece_trainer.h>

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: vidgraph-train-demo-tokenizer CORPUS.txt OUT_DIR\n";
    return 2;
  }
  const fs::path out(argv[2]);
  std::error_code ec;
  fs::create_directories(out, ec);
  const std::string args = std::string("--input=") + argv[1] + " --model_prefix=" +
                           (out / "spiece").string() +
                           " --vocab_size=400 --hard_vocab_limit=false --model_type=unigram"
                           " --character_coverage=1.0 --pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1"
                           " --normalization_rule_name=identity --num_threads=1"
                           " --shuffle_input_sentence=false --minloglevel=2";
  const auto status = sentencepiece::SentencePieceTrainer::Train(args);
  if (!status.ok()) {
    std::cerr << "vidgraph-train-demo-tokenizer: training failed: " << status.ToString() << "\n";
    return 1;
  }
  fs::remove(out / "spiece.vocab", ec);
  return 0;
}

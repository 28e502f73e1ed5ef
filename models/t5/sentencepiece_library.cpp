#include "sentencepiece_library.h"

#include <dlfcn.h>

#include <mutex>
#include <new>
#include <stdexcept>
#include <string_view>

#if __has_include(<sentencepiece_processor.h>)
#include <sentencepiece_processor.h>
#define VIDGRAPH_HAVE_SPM_HEADER 1
#endif

namespace vidgraph::t5 {

namespace {

// Room for a SentencePieceProcessor (0.1.9x: a few pointers); checked against the header when present.
constexpr size_t kProcessorBytes = 512;
constexpr std::align_val_t kProcessorAlign{64};
#ifdef VIDGRAPH_HAVE_SPM_HEADER
static_assert(sizeof(sentencepiece::SentencePieceProcessor) <= kProcessorBytes, "SentencePieceProcessor grew");
static_assert(alignof(sentencepiece::SentencePieceProcessor) <= 64, "SentencePieceProcessor alignment grew");
#endif

// Same size and call convention as sentencepiece::util::Status (one owning pointer and a
// user-provided destructor, so returned through a hidden pointer); released by the library's own
// destructor.
struct StatusHolder {
  void* rep = nullptr;
  ~StatusHolder();
  bool ok() const { return rep == nullptr; }
};
#ifdef VIDGRAPH_HAVE_SPM_HEADER
static_assert(sizeof(StatusHolder) == sizeof(sentencepiece::util::Status), "util::Status layout changed");
#endif

struct Api {
  void (*construct)(void*) = nullptr;
  void (*destruct)(void*) = nullptr;
  StatusHolder (*load)(void*, std::string_view) = nullptr;
  StatusHolder (*load_bytes)(void*, std::string_view) = nullptr;
  StatusHolder (*encode)(const void*, std::string_view, std::vector<int>*) = nullptr;
  int (*pad_id)(const void*) = nullptr;
  int (*eos_id)(const void*) = nullptr;
  int (*unk_id)(const void*) = nullptr;
  int (*piece_to_id)(const void*, std::string_view) = nullptr;
  int (*piece_size)(const void*) = nullptr;
  void (*status_destruct)(StatusHolder*) = nullptr;
  std::string (*status_string)(const StatusHolder*) = nullptr;
  std::string error;  // why the library could not be used
};

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VIDGRAPH_ASAN 1
#endif
#elif defined(__SANITIZE_ADDRESS__)
#define VIDGRAPH_ASAN 1
#endif

// dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND). AddressSanitizer's dlopen wrapper refuses
// RTLD_DEEPBIND outright (google/sanitizers issue 611: the deep-bound library calls libc's allocator,
// not the sanitizer's), which would stop the sanitized builds (the fuzz targets) at the first
// tokenizer. There the C library's own dlopen is called instead: the library's operator new and
// delete still end in the sanitizer's heap (libstdc++'s operator new calls the sanitizer's malloc),
// so objects that cross stay valid on both sides; only the sanitizer's new/delete pairing check
// reports them (fuzz_gguf_tokenizer turns it off).
void* open_private(const char* name) {
  constexpr int kFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#ifdef VIDGRAPH_ASAN
  using OpenFn = void* (*)(const char*, int);
  for (const char* libc : {"libc.so.6", "libdl.so.2"}) {
    void* handle = ::dlopen(libc, RTLD_NOW | RTLD_NOLOAD);
    const auto real_open = handle == nullptr ? nullptr : reinterpret_cast<OpenFn>(::dlsym(handle, "dlopen"));
    if (real_open != nullptr) return real_open(name, kFlags);
  }
#endif
  return ::dlopen(name, kFlags);
}

template <typename F>
void bind(void* handle, const char* symbol, F& slot, std::string& error) {
  void* p = ::dlsym(handle, symbol);
  if (p == nullptr && error.empty()) {
    error = std::string("libsentencepiece.so.0 lacks the symbol ") + symbol + " (unsupported version)";
  }
  slot = reinterpret_cast<F>(p);
}

const Api& api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = open_private("libsentencepiece.so.0");
    if (h == nullptr) {
      const char* why = ::dlerror();
      a.error = std::string("cannot open libsentencepiece.so.0 (install the libsentencepiece0 package): ") +
                (why ? why : "unknown error");
      return;
    }
    bind(h, "_ZN13sentencepiece22SentencePieceProcessorC1Ev", a.construct, a.error);
    bind(h, "_ZN13sentencepiece22SentencePieceProcessorD1Ev", a.destruct, a.error);
    bind(h, "_ZN13sentencepiece22SentencePieceProcessor4LoadESt17basic_string_viewIcSt11char_traitsIcEE", a.load,
         a.error);
    bind(h,
         "_ZN13sentencepiece22SentencePieceProcessor23LoadFromSerializedProtoESt17basic_string_viewIcSt11char_"
         "traitsIcEE",
         a.load_bytes, a.error);
    bind(h,
         "_ZNK13sentencepiece22SentencePieceProcessor6EncodeESt17basic_string_viewIcSt11char_"
         "traitsIcEEPSt6vectorIiSaIiEE",
         a.encode, a.error);
    bind(h, "_ZNK13sentencepiece22SentencePieceProcessor6pad_idEv", a.pad_id, a.error);
    bind(h, "_ZNK13sentencepiece22SentencePieceProcessor6eos_idEv", a.eos_id, a.error);
    bind(h, "_ZNK13sentencepiece22SentencePieceProcessor6unk_idEv", a.unk_id, a.error);
    bind(h, "_ZNK13sentencepiece22SentencePieceProcessor9PieceToIdESt17basic_string_viewIcSt11char_traitsIcEE",
         a.piece_to_id, a.error);
    bind(h, "_ZNK13sentencepiece22SentencePieceProcessor12GetPieceSizeEv", a.piece_size, a.error);
    bind(h, "_ZN13sentencepiece4util6StatusD1Ev", a.status_destruct, a.error);
    bind(h, "_ZNK13sentencepiece4util6Status8ToStringB5cxx11Ev", a.status_string, a.error);
  });
  return a;
}

StatusHolder::~StatusHolder() {
  if (rep != nullptr) {
    api().status_destruct(this);
  }
}

}  // namespace

void train_sentencepiece(const std::string& flags) {
  const Api& a = api();  // the trainer needs libsentencepiece, opened privately first
  if (!a.error.empty()) {
    throw std::runtime_error("cannot train a SentencePiece model: " + a.error);
  }
  static void* handle = open_private("libsentencepiece_train.so.0");
  if (handle == nullptr) {
    throw std::runtime_error("cannot open libsentencepiece_train.so.0 (install libsentencepiece-dev)");
  }
  using TrainFn = StatusHolder (*)(std::string_view, void*, std::string*);
  const auto train = reinterpret_cast<TrainFn>(
      ::dlsym(handle,
              "_ZN13sentencepiece20SentencePieceTrainer5TrainESt17basic_string_viewIcSt11char_traitsIcEE"
              "PNS_16SentenceIteratorEPNSt7__cxx1112basic_stringIcS3_SaIcEEE"));
  if (train == nullptr) {
    throw std::runtime_error("libsentencepiece_train.so.0 lacks SentencePieceTrainer::Train (unsupported version)");
  }
  const StatusHolder status = train(flags, nullptr, nullptr);
  if (!status.ok()) {
    throw std::runtime_error("SentencePiece training failed: " + a.status_string(&status));
  }
}

std::unique_ptr<SentencePiece> SentencePiece::create(const std::string& origin) {
  const Api& a = api();
  if (!a.error.empty()) {
    throw std::runtime_error("cannot load the tokenizer '" + origin + "': " + a.error);
  }
  std::unique_ptr<SentencePiece> sp(new SentencePiece());
  void* memory = ::operator new(kProcessorBytes, kProcessorAlign);
  try {
    a.construct(memory);
  } catch (...) {
    ::operator delete(memory, kProcessorAlign);
    throw;
  }
  sp->processor_ = memory;
  return sp;
}

std::unique_ptr<SentencePiece> SentencePiece::load(const std::string& model_path) {
  std::unique_ptr<SentencePiece> sp = create(model_path);
  const StatusHolder status = api().load(sp->processor_, model_path);
  if (!status.ok()) {
    throw std::runtime_error("cannot load the SentencePiece tokenizer '" + model_path +
                             "': " + api().status_string(&status) + " (expected the umT5 spiece.model)");
  }
  return sp;
}

std::unique_ptr<SentencePiece> SentencePiece::load_from_bytes(const std::string& bytes, const std::string& origin) {
  std::unique_ptr<SentencePiece> sp = create(origin);
  const StatusHolder status = api().load_bytes(sp->processor_, bytes);
  if (!status.ok()) {
    throw std::runtime_error("cannot load the SentencePiece tokenizer of '" + origin +
                             "': " + api().status_string(&status) + " (expected the bytes of the umT5 spiece.model)");
  }
  return sp;
}

SentencePiece::~SentencePiece() {
  if (processor_ != nullptr) {
    api().destruct(processor_);
    ::operator delete(processor_, kProcessorAlign);
  }
}

std::vector<int> SentencePiece::encode(const std::string& text) const {
  std::vector<int> ids;
  const StatusHolder status = api().encode(processor_, text, &ids);
  if (!status.ok()) {
    throw std::runtime_error("cannot tokenize the prompt: " + api().status_string(&status));
  }
  return ids;
}

int SentencePiece::pad_id() const {
  return api().pad_id(processor_);
}
int SentencePiece::eos_id() const {
  return api().eos_id(processor_);
}
int SentencePiece::unk_id() const {
  return api().unk_id(processor_);
}
int SentencePiece::piece_to_id(const std::string& piece) const {
  return api().piece_to_id(processor_, piece);
}
int SentencePiece::piece_size() const {
  return api().piece_size(processor_);
}

}  // namespace vidgraph::t5

// Encode Dataset: turns a checked dataset into training samples on disk. Each clip is read at the
// training size (every frame_stride-th frame, scaled and centre-cropped as Load Image does),
// encoded with the VAE, its caption encoded with umT5 (once per distinct caption), and the pair
// cached as a sample file (training_set.h) named by a content key (dataset_cache_key.h): a re-run
// reuses every sample whose clip, caption, settings and model files are unchanged. In a run of
// several ranks only rank 0 encodes; it sends the samples to the others.
#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <filesystem>
#include <map>

#include "models/vae/wan_vae.h"
#include "models/wan/wan_config.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/common/rank_broadcast.h"
#include "nodes/datasets/dataset_cache_key.h"
#include "nodes/datasets/video_dataset.h"
#include "nodes/media/clip_reader.h"
#include "nodes/media/image_io.h"
#include "nodes/model/model_handles.h"
#include "nodes/size_rules.h"
#include "nodes/sampling/image_conditioning.h"
#include "nodes/training/training_set.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

using engine::ParamSpec;

namespace {

struct EncodeSettings {
  int width = 0, height = 0, frames = 0, stride = 1;
  std::string mode;
  // i2v with a 16-channel VAE (the Wan2.1 VAE of Wan2.2-I2V-A14B): store the image conditioning too.
  bool condition = false;
  int needed_frames() const { return 1 + (frames - 1) * stride; }
  std::string json() const {
    nlohmann::json j{{"width", width}, {"height", height}, {"frames", frames},
                     {"frame_stride", stride}, {"mode", mode}, {"format", kTrainingSampleFormat}};
    if (condition) j["condition"] = "i2v-a14b";
    return j.dump();
  }
};

// The checks of the params alone: the preflight (before any node runs) and compute share them.
std::string check_settings(const nlohmann::json& params) {
  const int frames = params.value("frames", 0);
  if (frames < 1 || (frames - 1) % 4 != 0) {
    return "frames must be 4k + 1 (1, 5, 9, 13, 17, ...) for the VAE's 4x time compression; got " +
           std::to_string(frames) + ".";
  }
  const int width = params.value("width", 0), height = params.value("height", 0);
  if (!is_valid_output_size(width, height)) {
    return "width and height must be positive multiples of 32; got " + std::to_string(width) + "x" +
           std::to_string(height) + ".";
  }
  return {};
}

// Reads, fits and normalises a clip: [1, 3, F, H, W] float32 in [-1, 1].
at::Tensor clip_tensor(const DatasetClip& clip, const EncodeSettings& s, const engine::NodeContext& ctx) {
  media::ClipRead read;
  read.stride = s.stride;
  read.count = s.frames;
  read.cancelled = [&ctx] { return ctx.cancelled(); };
  Frames frames;
  std::string error;
  if (!media::read_clip(clip.path, read, &frames, &error)) throw std::runtime_error(error);
  Frames fitted{frames.count, s.width, s.height, {}};
  fitted.rgb.reserve(fitted.frame_bytes() * frames.count);
  for (int i = 0; i < frames.count; ++i) {
    Image in{frames.width, frames.height,
             std::vector<std::uint8_t>(frames.frame(i), frames.frame(i) + frames.frame_bytes())};
    Image out;
    if (!media::resize_center_crop(in, s.width, s.height, &out, &error)) {
      throw std::runtime_error("Clip '" + clip.name + "': " + error);
    }
    fitted.rgb.insert(fitted.rgb.end(), out.rgb.begin(), out.rgb.end());
  }
  const at::Tensor pixels = at::from_blob(fitted.rgb.data(), {fitted.count, s.height, s.width, 3}, at::kByte);
  return (pixels.permute({3, 0, 1, 2}).to(at::kFloat) / 127.5 - 1.0).unsqueeze(0).contiguous();
}

struct EncodeRun {
  const engine::NodeContext& ctx;
  const VaeHandle& vae;
  const TextEncoderHandle& encoder;
  EncodeSettings settings;
  std::map<std::string, at::Tensor> contexts;  // caption -> [L, text_dim]
  int encoded = 0, cached = 0;

  const at::Tensor& caption_context(const std::string& caption) {
    auto it = contexts.find(caption);
    if (it == contexts.end()) it = contexts.emplace(caption, encoder.encode(caption)[0].contiguous()).first;
    return it->second;
  }

  // The sample of one clip: from the cache, or encoded and written now.
  TrainingSampleFile sample(const DatasetClip& clip, const fs::path& folder) {
    std::string error;
    const std::string content = clip_content_hash(clip.path, &error);
    if (content.empty()) throw std::runtime_error(error);
    const std::string key = sample_key(content, clip.caption, settings.json(),
                                       model_file_identity(vae.path), model_file_identity(encoder.path));
    const std::string path = (folder / (key + ".safetensors")).string();
    TrainingSampleFile file;
    std::error_code ec;
    if (fs::exists(path, ec)) {
      if (std::string bad = read_training_sample_info(path, &file); !bad.empty()) {
        throw std::runtime_error("The cached sample of clip '" + clip.name + "' is damaged (" + bad +
                                 "); delete it to encode the clip again.");
      }
      ++cached;
      return file;
    }
    TrainingSampleData data;
    const at::Tensor video = clip_tensor(clip, settings, ctx);
    vae::VaeCallbacks callbacks;
    callbacks.cancelled = [this] { return ctx.cancelled(); };
    data.latent = vae.vae->encode(video.to(vae.device, vae.dtype), callbacks)[0].to(c10::kCPU, at::kFloat);
    if (settings.condition) {
      data.condition = encode_i2v_condition(vae, video.narrow(2, 0, 1), video.size(2), callbacks).to(c10::kCPU);
    }
    data.context = caption_context(clip.caption).to(c10::kCPU, at::kFloat);
    data.caption = clip.caption;
    data.source = clip.name;
    data.mode = settings.mode;
    data.settings = settings.json();
    if (std::string bad = write_training_sample(path, data); !bad.empty()) throw std::runtime_error(bad);
    if (std::string bad = read_training_sample_info(path, &file); !bad.empty()) throw std::runtime_error(bad);
    ++encoded;
    return file;
  }
};

// Several ranks: rank 0 encodes (and caches) the set and sends its samples: a JSON list of each
// sample's file name, caption, source, mode and settings (as bytes), the dropout context, then each
// sample's latent and context. A rank above 0 writes them into its own scratch folder, so every rank
// trains on the same samples and only rank 0 encodes and keeps a cache.
std::vector<at::Tensor> training_set_tensors(const TrainingSet& set) {
  nlohmann::json meta = nlohmann::json::array();
  std::vector<at::Tensor> tensors{at::Tensor(), set.dropout_context};
  for (const TrainingSampleFile& file : set.samples) {
    TrainingSampleData data = read_training_sample(file.path);
    meta.push_back({{"file", fs::path(file.path).filename().string()}, {"caption", data.caption},
                    {"source", data.source}, {"mode", data.mode}, {"settings", data.settings},
                    {"condition", data.condition.defined()}});
    tensors.push_back(data.latent);
    tensors.push_back(data.context);
    if (data.condition.defined()) tensors.push_back(data.condition);
  }
  const std::string text = meta.dump();
  tensors[0] = at::from_blob(const_cast<char*>(text.data()), {int64_t(text.size())}, at::kByte).clone();
  return tensors;
}

engine::Result<TrainingSet> training_set_from_tensors(const engine::NodeContext& ctx,
                                                      const std::vector<at::Tensor>& received) {
  const at::Tensor bytes = received.at(0).to(at::kByte).contiguous();
  const auto* chars = bytes.data_ptr<uint8_t>();
  const auto meta = nlohmann::json::parse(std::string(chars, chars + bytes.numel()));
  TrainingSet set;
  set.cache_folder = (fs::path(ctx.options().output_directory()) / "training-set-from-rank-0").string();
  set.dropout_context = received.at(1);
  std::error_code ec;
  fs::create_directories(set.cache_folder, ec);
  std::size_t next = 2;
  for (size_t i = 0; i < meta.size(); ++i) {
    const auto text = [&](const char* key) { return meta[i][key].get<std::string>(); };
    TrainingSampleData data;
    data.latent = received.at(next++);
    data.context = received.at(next++);
    if (meta[i].value("condition", false)) data.condition = received.at(next++);
    data.caption = text("caption");
    data.source = text("source");
    data.mode = text("mode");
    data.settings = text("settings");
    TrainingSampleFile file;
    const std::string path = (fs::path(set.cache_folder) / meta[i]["file"].get<std::string>()).string();
    std::string bad = write_training_sample(path, data);
    if (bad.empty()) bad = read_training_sample_info(path, &file);
    if (!bad.empty()) return node_error(ctx, "Could not keep rank 0's training sample: " + bad);
    set.samples.push_back(std::move(file));
  }
  return set;
}

engine::Result<TrainingSet> encode_training_set(const engine::NodeContext& ctx) {
  if (std::string bad = check_settings(ctx.params()); !bad.empty()) return node_error(ctx, bad);
  const auto& dataset = ctx.input_as<VideoDataset>("dataset");
  EncodeSettings settings{static_cast<int>(ctx.param_int("width")),
                                static_cast<int>(ctx.param_int("height")),
                                static_cast<int>(ctx.param_int("frames")),
                                static_cast<int>(ctx.param_int("frame_stride")), ctx.param_string("mode")};
  const VaeHandle& vae = ctx.input_as<VaeHandle>("vae");
  settings.condition = settings.mode == "i2v" && vae.vae->config().z_dim == 16;
  EncodeRun run{ctx, vae, ctx.input_as<TextEncoderHandle>("text_encoder"),
                settings, {}, 0, 0};
  std::string short_clips;
  for (const DatasetClip& clip : dataset.clips) {
    if (clip.frame_count < run.settings.needed_frames()) {
      short_clips += "\n  " + clip.name + ": " + std::to_string(clip.frame_count) + " frames";
    }
  }
  if (!short_clips.empty()) {
    return node_error(ctx, "frames " + std::to_string(run.settings.frames) + " with frame_stride " +
                           std::to_string(run.settings.stride) + " needs " +
                           std::to_string(run.settings.needed_frames()) + " source frames per clip; "
                           "these clips are shorter (lower frames or frame_stride, or raise Load Video "
                           "Dataset's frames to skip them):" + short_clips);
  }
  const fs::path folder = ctx.param_path("cache_folder");
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (!fs::is_directory(folder, ec)) {
    return node_error(ctx, "cache_folder '" + folder.string() + "' is not a folder and could not be "
                           "created; choose a writable folder.");
  }
  TrainingSet set;
  set.cache_folder = folder.string();
  const int64_t total = static_cast<int64_t>(dataset.clips.size());
  try {
    c10::InferenceMode inference;
    for (int64_t i = 0; i < total; ++i) {
      if (ctx.cancelled()) return node_error(ctx, "Dataset encoding cancelled.");
      const DatasetClip& clip = dataset.clips[i];
      ctx.progress(i, total, clip.name);
      set.samples.push_back(run.sample(clip, folder));
    }
    set.dropout_context = run.caption_context(ctx.param_string("dropout_prompt")).to(c10::kCPU, at::kFloat);
  } catch (const vae::VaeCancelled&) {
    return node_error(ctx, "Dataset encoding cancelled.");
  } catch (const c10::Error& e) {
    return node_error(ctx, std::string("Encoding the dataset failed: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return node_error(ctx, std::string("Encoding the dataset failed: ") + e.what());
  }
  ctx.progress(total, total, "encoded");
  ctx.log_info("Training set in '" + set.cache_folder + "': " + std::to_string(run.encoded) +
               " clip(s) encoded, " + std::to_string(run.cached) + " from the cache.");
  return set;
}

engine::Result<engine::ValueMap> compute_encode_dataset(engine::NodeContext& ctx) {
  auto set = computed_on_rank0<TrainingSet>(
      ctx, "encode the dataset", [&] { return encode_training_set(ctx); }, training_set_tensors,
      [&](const std::vector<at::Tensor>& tensors) { return training_set_from_tensors(ctx, tensors); });
  if (!set.ok()) return set.error();
  if (sends_to_other_ranks(ctx)) {
    ctx.log_info("Sent the training set's " + std::to_string(set->samples.size()) + " samples to the other ranks.");
  }
  const std::size_t bytes = sizeof(TrainingSet) + set->samples.size() * sizeof(TrainingSampleFile) +
                            set->dropout_context.nbytes();
  return engine::ValueMap{{"training_set", engine::make_value(kTrainingSetType, std::move(*set), bytes)}};
}

}  // namespace

engine::NodeType encode_dataset_node() {
  engine::NodeType t;
  t.name = "EncodeDataset";
  t.display_name = "Encode Dataset";
  t.category = "training";
  t.description = "Encodes every clip of a dataset for training: frames read at frame_stride, scaled "
                  "and centre-cropped to width x height, VAE-encoded to latents, captions encoded "
                  "with umT5. Samples are cached in cache_folder by content (clip, caption, these "
                  "settings, model files): a re-run encodes only what changed, and training needs "
                  "no text encoder. The dropout prompt is encoded too, for Train Wan's caption "
                  "dropout.";
  t.inputs = {{"vae", kVaeType, false, "From Load Wan Model."},
              {"text_encoder", kTextEncoderType, false, "From Load Wan Model."},
              {"dataset", kDatasetType, false, "From Load Video Dataset."}};
  t.outputs = {{"training_set", kTrainingSetType, false, "The cached samples, for Train Wan."}};
  t.params = {
      ParamSpec::integer("width", 256, 32, 4096, "Training width, a multiple of 32."),
      ParamSpec::integer("height", 256, 32, 4096, "Training height, a multiple of 32."),
      ParamSpec::integer("frames", 17, 1, 1001, "Frames per sample, 4k + 1 (1, 5, 9, ..., 81)."),
      ParamSpec::integer("frame_stride", 1, 1, 64,
                         "Take every n-th source frame (2 halves a 24 fps clip to 12 fps)."),
      ParamSpec::enumeration("mode", {"t2v", "i2v"}, "t2v",
                             "t2v: text to video; i2v: image to video from each clip's first frame (its "
                             "first latent frame for TI2V-5B; with a Wan2.1 VAE also Wan2.2-I2V-A14B's "
                             "image conditioning, stored in the sample)."),
      ParamSpec::folder_path("cache_folder", "{output}/dataset-cache",
                             "Where encoded samples are kept (reused by later runs).").written(),
      ParamSpec::text("dropout_prompt", wan::default_negative_prompt(),
                      "What a sample trains on when Train Wan drops its caption: the negative prompt "
                      "the sampler guides against."),
  };
  t.params.back().advanced = true;
  t.preflight = [](const nlohmann::json& params, const engine::RunOptions&) {
    return check_settings(params);
  };
  t.compute = compute_encode_dataset;
  return t;
}

}  // namespace vidgraph::nodes

#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into corpus/<target>/ (a few tiny valid inputs).

Run from anywhere: python3 tests/fuzz/make_corpus.py. The pickles follow what torch.save writes
for a state dict (protocol 2; see tests/common/model_io_pth_writer.h), without needing torch.
"""
import json
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def write(target, name, data):
    folder = HERE / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)] -> a whole .safetensors file."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(text)) + text + data


def gguf(kvs, tensors):
    """kvs: [(key, type id, packed value)], tensors: [(name, dims, ggml type, bytes)] -> a GGUF v3 file."""
    def string(t):
        return struct.pack("<Q", len(t)) + t.encode()
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, kind, value in kvs:
        head += string(key) + struct.pack("<I", kind) + value
    data = b""
    for name, dims, kind, raw in tensors:
        head += string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        head += struct.pack("<IQ", kind, len(data))
        data += raw + b"\0" * (-len(raw) % 32)
    return head + b"\0" * (-len(head) % 32) + data


def gguf_array(kind, fmt, values):
    """A GGUF array value of scalars packed with struct format `fmt` (type ids: 0 u8, 5 i32, 6 f32)."""
    return struct.pack("<IQ", kind, len(values)) + b"".join(struct.pack("<" + fmt, v) for v in values)


def gguf_strings(values):
    """A GGUF string array (lengths in UTF-8 bytes, not characters)."""
    encoded = [v.encode() for v in values]
    return struct.pack("<IQ", 8, len(encoded)) + b"".join(struct.pack("<Q", len(v)) + v for v in encoded)


def charsmap(rules):
    """A SentencePiece normaliser table (tokenizer.ggml.precompiled_charsmap) mapping each key of
    `rules` (bytes) to its string: a uint32 trie size in bytes, a Darts-clone double array, then the
    NUL-terminated strings (models/t5/charsmap_check.h). Every trie node gets a 256-unit block of its
    own for its children; a unit is its label (bits 0-7), has-a-rule (bit 8) and the offset to its
    children (from bit 10); a block's unit 0 is the node's rule (its string's offset, bit 31 set) or
    a unit no byte matches."""
    strings, values = b"", {}
    for key, out in rules.items():
        values[key] = len(strings)
        strings += out + b"\0"
    units = [0] * 256  # block 0 holds the root, unit 0

    def block(prefix):
        base = len(units)
        units.extend([(1 << 31) | values.get(prefix, 0)] + [0] * 255)
        for c in sorted({k[len(prefix)] for k in rules if len(k) > len(prefix) and k.startswith(prefix)}):
            key = prefix + bytes([c])
            children = block(key)
            units[base ^ c] = ((base ^ c ^ children) << 10) | ((1 << 8) if key in values else 0) | c
        return base

    units[0] = block(b"") << 10
    trie = struct.pack("<%dI" % len(units), *units)
    return struct.pack("<I", len(trie)) + trie + strings


# NFKC-like rules: full-width letters, U+1D43, a ligature, and one rule whose key extends another's.
NFKC_RULES = {"\uff41".encode(): b"a", "\uff42".encode(): b"b", "\u1d43".encode(): b"a",
              "\ufb01".encode(): b"fi", b"\xe2\x80\x83": b" "}


def tokenizer_gguf(pieces, types, scores=None, table=None, extra=()):
    """A t5encoder GGUF carrying llama.cpp's tokenizer metadata (types: 1 normal, 2 unknown, 3 control,
    4 user-defined, 6 byte)."""
    kvs = [("general.architecture", 8, struct.pack("<Q", 9) + b"t5encoder"),
           ("tokenizer.ggml.model", 8, struct.pack("<Q", 2) + b"t5"),
           ("tokenizer.ggml.tokens", 9, gguf_strings(pieces)),
           ("tokenizer.ggml.scores", 9, gguf_array(6, "f", scores or [-float(i) for i in range(len(pieces))])),
           ("tokenizer.ggml.token_type", 9, gguf_array(5, "i", types)),
           ("tokenizer.ggml.add_space_prefix", 7, b"\1"),
           ("tokenizer.ggml.remove_extra_whitespaces", 7, b"\1")]
    if table is not None:
        kvs.append(("tokenizer.ggml.precompiled_charsmap", 9, gguf_array(0, "B", list(table))))
    return gguf(kvs + list(extra), [])


def tokenizer_seeds():
    base = ["<pad>", "</s>", "<unk>", "\u2581a", "\u2581red", "\u2581circle", "a", "b", "fi", "\u2581"]
    base_types = [3, 3, 2] + [1] * 7
    table = charsmap(NFKC_RULES)
    write("fuzz_gguf_tokenizer", "nfkc.gguf", tokenizer_gguf(base, base_types, table=table))
    write("fuzz_gguf_tokenizer", "identity.gguf", tokenizer_gguf(base, base_types))
    user = base + ["<x>", "<x><y>", "[[", "[[["]
    write("fuzz_gguf_tokenizer", "user_defined.gguf", tokenizer_gguf(user, base_types + [4] * 4, table=table))
    with_bytes = base + ["<0x%02X>" % b for b in range(256)]
    write("fuzz_gguf_tokenizer", "byte_fallback.gguf", tokenizer_gguf(with_bytes, base_types + [6] * 256))


class Pickle:
    """Protocol-2 pickle of an OrderedDict of tensors, as torch.save writes a state dict."""

    def __init__(self):
        self.out, self.memo = bytearray(b"\x80\x02"), 0

    def put(self):
        self.out += b"q" + bytes([self.memo])
        self.memo += 1

    def glob(self, module, name):
        self.out += b"c" + module.encode() + b"\n" + name.encode() + b"\n"
        self.put()

    def text(self, s):
        self.out += b"X" + struct.pack("<I", len(s)) + s.encode()
        self.put()

    def int(self, v):
        self.out += b"K" + bytes([v]) if v < 256 else b"J" + struct.pack("<i", v)

    def ordered_dict(self):
        self.glob("collections", "OrderedDict")
        self.out += b")R"
        self.put()

    def ints(self, values):
        self.out += b"("
        for v in values:
            self.int(v)
        self.out += b"t"
        self.put()

    def tensor(self, storage, key, numel, sizes, strides):
        self.glob("torch._utils", "_rebuild_tensor_v2")
        self.out += b"(("
        self.text("storage")
        self.glob("torch", storage)
        self.text(key)
        self.text("cpu")
        self.int(numel)
        self.out += b"t"
        self.put()
        self.out += b"Q"
        self.int(0)
        self.ints(sizes)
        self.ints(strides)
        self.out += b"\x89"
        self.ordered_dict()
        self.out += b"t"
        self.put()
        self.out += b"R"
        self.put()

    def state_dict(self, tensors):
        self.ordered_dict()
        if tensors:
            self.out += b"("
            for name, args in tensors:
                self.text(name)
                self.tensor(*args)
            self.out += b"u"
        return bytes(self.out + b".")


def main():
    for name in ["good.vgflow", "write.vgflow", "fail.vgflow"]:
        write("fuzz_workflow", name, (ROOT / "tests/cli/data" / name).read_bytes())
    write("fuzz_workflow", "empty.vgflow", '{"format": "vidgraph-workflow", "version": 1, "nodes": []}')
    write("fuzz_workflow", "unknown.vgflow",
          '{"format": "vidgraph-workflow", "version": 1, "extra": [1], "nodes": ['
          '{"id": "m", "type": "Mystery", "params": {"p": "\\u00e9"}, "note": null},'
          '{"id": "k", "type": "Kinds", "type_version": 1, "params": {"seed": 3, "mode": "slow"},'
          ' "inputs": {"x": {"node": "m", "output": "o"}}}], "editor": {"nodes": {"k": {"pos": [1, 2]}}}}')

    write("fuzz_safetensors", "one_f32.safetensors", safetensors([("w", "F32", [2], struct.pack("<2f", 1, 2))]))
    write("fuzz_safetensors", "two_mixed.safetensors",
          safetensors([("a.weight", "BF16", [2, 1], b"\x80\x3f\x00\x40"), ("b", "I64", [], struct.pack("<q", 7))],
                      {"format": "pt"}))
    write("fuzz_safetensors", "empty.safetensors", safetensors([]))

    write("fuzz_pth", "one_tensor.pkl", Pickle().state_dict([("w", ("FloatStorage", "0", 4, [2, 2], [2, 1]))]))
    write("fuzz_pth", "two_tensors.pkl",
          Pickle().state_dict([("a", ("BFloat16Storage", "0", 3, [3], [1])), ("b", ("LongStorage", "1", 1, [], []))]))
    write("fuzz_pth", "empty.pkl", Pickle().state_dict([]))

    arch = ("general.architecture", 8, struct.pack("<Q", 9) + b"t5encoder")
    write("fuzz_gguf", "one_f32.gguf", gguf([arch], [("token_embd.weight", [2, 2], 0, struct.pack("<4f", 1, 2, 3, 4))]))
    pieces = ["<pad>", "</s>", "<unk>", "\u2581a", "\u2581red", "b"]
    write("fuzz_gguf", "tokenizer.gguf", gguf([
        arch, ("tokenizer.ggml.model", 8, struct.pack("<Q", 2) + b"t5"),
        ("tokenizer.ggml.tokens", 9, gguf_strings(pieces)),
        ("tokenizer.ggml.scores", 9, gguf_array(6, "f", [0, 0, 0, -1.5, -2.0, -3.25])),
        ("tokenizer.ggml.token_type", 9, gguf_array(5, "i", [3, 3, 2, 1, 1, 1])),
        ("tokenizer.ggml.add_space_prefix", 7, b"\1"),
        ("tokenizer.ggml.precompiled_charsmap", 9, gguf_array(0, "B", list(charsmap(NFKC_RULES))))], []))
    write("fuzz_gguf", "empty.gguf", gguf([], []))

    tokenizer_seeds()
    comfy_seeds()
    model_paths_seeds()
    lora_seeds()


def comfy_seeds():
    """A UI-format graph (nodes, links, widgets_values, a group, a bypassed node) and an API-format
    prompt, shaped like ComfyUI's Wan2.2 5B template but written here."""
    ui = {
        "last_node_id": 4, "last_link_id": 3, "version": 0.4,
        "nodes": [
            {"id": 1, "type": "UNETLoader", "mode": 0, "inputs": [],
             "outputs": [{"name": "MODEL", "type": "MODEL", "links": [1]}],
             "widgets_values": ["wan2.2_ti2v_5B_fp16.safetensors", "default"]},
            {"id": 2, "type": "CLIPTextEncode", "mode": 0, "inputs": [{"name": "clip", "type": "CLIP", "link": None}],
             "outputs": [{"name": "CONDITIONING", "type": "CONDITIONING", "links": [2]}],
             "widgets_values": ["a red fox in the snow"]},
            {"id": 3, "type": "KSampler", "mode": 0,
             "inputs": [{"name": "model", "type": "MODEL", "link": 1},
                        {"name": "positive", "type": "CONDITIONING", "link": 2}],
             "outputs": [{"name": "LATENT", "type": "LATENT", "links": [3]}],
             "widgets_values": [42, "fixed", 20, 5.0, "uni_pc", "simple", 1.0]},
            {"id": 4, "type": "Note", "mode": 4, "inputs": [], "outputs": [], "widgets_values": ["bypassed"]},
        ],
        "links": [[1, 1, 0, 3, 0, "MODEL"], [2, 2, 0, 3, 1, "CONDITIONING"], [3, 3, 0, 4, 0, "LATENT"]],
        "groups": [{"title": "Model", "bounding": [0, 0, 100, 100]}],
    }
    write("fuzz_comfy", "ui.json", json.dumps(ui))
    api = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_ti2v_5B_fp16.safetensors",
                                                     "weight_dtype": "default"}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "a red fox", "clip": ["5", 0]}},
        "3": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["2", 0], "seed": 1, "steps": 8,
                                                   "cfg": 3.0, "sampler_name": "euler", "scheduler": "simple",
                                                   "denoise": 1.0}},
        "5": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors",
                                                     "type": "wan"}},
    }
    write("fuzz_comfy", "api.json", json.dumps(api))


def model_paths_seeds():
    """ComfyUI's extra_model_paths.yaml: a base_path with per-kind folders, a `|` block, $VARS."""
    write("fuzz_model_paths", "comfyui.yaml",
          "comfyui:\n  base_path: /opt/ComfyUI\n  is_default: true\n  checkpoints: models/checkpoints/\n"
          "  diffusion_models: |\n    models/diffusion_models\n    models/unet\n  vae: models/vae/\n"
          "  text_encoders: models/text_encoders/\n  loras: models/loras/\n")
    write("fuzz_model_paths", "vars.yaml", "other:\n  base_path: ~/$HOME/x\n  unet: a\n  clip: b\n")


def lora_seeds():
    """LoRAs for the tiny Wan DiT (dim 64, ffn 128) in the layouts users have: ComfyUI/kohya
    (lora_down/lora_up + alpha), PEFT (lora_A/lora_B under base_model.model.), diff_b and diff."""
    def f32(n, v=0.01):
        return struct.pack("<%df" % n, *([v] * n))
    write("fuzz_lora", "comfy.safetensors", safetensors([
        ("diffusion_model.blocks.0.self_attn.q.lora_down.weight", "F32", [2, 64], f32(128)),
        ("diffusion_model.blocks.0.self_attn.q.lora_up.weight", "F32", [64, 2], f32(128)),
        ("diffusion_model.blocks.0.self_attn.q.alpha", "F32", [], f32(1, 2.0))]))
    write("fuzz_lora", "peft.safetensors", safetensors([
        ("base_model.model.blocks.1.cross_attn.k.lora_A.weight", "BF16", [1, 64], b"\x80\x3c" * 64),
        ("base_model.model.blocks.1.cross_attn.k.lora_B.weight", "BF16", [64, 1], b"\x80\x3c" * 64)]))
    write("fuzz_lora", "diff.safetensors", safetensors([
        ("diffusion_model.blocks.1.ffn.0.diff_b", "F32", [128], f32(128)),
        ("diffusion_model.blocks.1.ffn.2.diff", "F32", [64, 128], f32(64 * 128))]))


if __name__ == "__main__":
    main()

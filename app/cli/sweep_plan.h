// `vidgraph-run run FLOW --sweep NODE.PARAM=V1,V2,...`: the runs a sweep makes, checked before any
// of them starts.
//
// Syntax: one --sweep per param; KEY is NODE.PARAM as in --set; the values are split at commas
// ("\," is a literal comma, "\\" a backslash) and each is parsed like a --set value for that param
// (engine/overrides.h), so `sampler.seed=1,2` gives integers and `sampler.attention=full,vsa` enum
// choices. Several --sweep options form the cartesian product in the order given: the first option
// varies slowest, the last fastest (`--sweep a.x=1,2 --sweep b.y=p,q` runs x=1 y=p, x=1 y=q,
// x=2 y=p, x=2 y=q).
//
// plan_sweep refuses, with sentences naming the option and node: a malformed option, an unknown node
// or param, a value the param does not accept, an empty list or value, a param swept twice or also
// given with --set, two runs with the same settings, more than kMaxSweepRuns runs, and any run whose
// document fails validation (every error of the first such run, prefixed with its settings).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/document.h"
#include "engine/registry.h"
#include "engine/result.h"

namespace vidgraph::cli {

inline constexpr std::size_t kMaxSweepRuns = 1000;

struct SweepAxis {
  std::string node_id;
  std::string param;
  std::vector<nlohmann::json> values;  // parsed and checked against the param's spec
  std::vector<std::string> texts;      // the same values as written (unescaped)

  std::string key() const { return node_id + "." + param; }
};

struct SweepRun {
  int index = 0;       // 1-based, in sweep order
  std::string folder;  // "run-1" ... ; zero-padded to the run count's width ("run-01" of 12)
  std::vector<std::pair<std::string, nlohmann::json>> settings;  // KEY → value, in axis order
  std::string settings_text;       // "sampler.seed=2 sampler.attention=vsa", values as written
  engine::GraphDocument document;  // the flow with --set and this run's values applied

  // {"sampler.seed": 2, ...}
  nlohmann::json settings_json() const;
};

struct SweepPlan {
  std::vector<SweepAxis> axes;
  std::vector<SweepRun> runs;
  std::vector<engine::Error> errors;  // non-empty: nothing may run
  std::vector<engine::Error> warnings;  // validation warnings of the first run

  bool ok() const { return errors.empty(); }
};

// Splits a value list at unescaped commas; an error names an empty item or a dangling backslash.
engine::Result<std::vector<std::string>> split_sweep_values(const std::string& list);
// Parses one --sweep option against the flow's nodes and the registry's param specs.
engine::Result<SweepAxis> parse_sweep_axis(const std::string& text, const engine::GraphDocument& doc,
                                           const engine::Registry& registry);
// The --sweep texts with each that names a subgraph instance's exposed param (NODE.PARAM, NODE an
// instance of `as_loaded`, the workflow before expansion) rewritten to the inner param it sets
// (NODE/INNER.PARAM): the runs are planned on the expanded document, which has only inner nodes.
// An error names the --sweep and what the instance exposes.
engine::Result<std::vector<std::string>> sweeps_on_inner_params(const engine::GraphDocument& as_loaded,
                                                                 const std::vector<std::string>& sweeps);
// `doc` already has --set applied; `sets` are those --set texts (a key may not be in both).
SweepPlan plan_sweep(const engine::GraphDocument& doc, const engine::Registry& registry,
                     const std::vector<std::string>& sweeps, const std::vector<std::string>& sets,
                     const std::vector<std::string>& targets);

}  // namespace vidgraph::cli

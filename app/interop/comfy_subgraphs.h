// ComfyUI subgraphs as Vidgraph subgraphs. The conversion works on the flattened graph, since its
// Wan mappings fold nodes across subgraph borders (a sampler takes its size from a latent node
// outside, one Load Wan Model gathers loaders from anywhere); afterwards the Vidgraph nodes made
// from each instance's inner nodes move into one Vidgraph subgraph (engine/subgraph_edits.h),
// innermost first, and each widget the instance promoted becomes an exposed param, named after
// the Vidgraph param that holds it. The Load Wan Model stays in the top graph, where
// `--set model.*` and the model drop-downs find it.
#pragma once

#include "interop/comfy_converter.h"
#include "interop/comfy_graph.h"
#include "interop/comfy_report.h"
#include "engine/document.h"
#include "engine/result.h"

namespace vidgraph::comfy {

// Groups `doc` (the converted `graph`) by `graph.subgraphs`; one report note per subgraph.
engine::Status group_subgraphs(engine::GraphDocument& doc, const ComfyGraph& graph, const CarriedWidgets& carried,
                               ImportReport& report);

}  // namespace vidgraph::comfy

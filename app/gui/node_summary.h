// nodeSummary: the few params worth seeing on the canvas without opening the inspector (seed, steps,
// frames, attention and sparsity, a prompt's first words, file names), as at most three short lines.
//
// Contract: pure (no Qt widgets); params missing from the node show their defaults; empty strings
// and unknown types give nothing.
#pragma once

#include <QtCore/QStringList>

#include "engine/document.h"
#include "engine/node_type.h"

namespace vidgraph::gui {

QStringList nodeSummary(const engine::NodeType& type, const engine::Node& node);

}  // namespace vidgraph::gui

// Where the model canvas puts its blocks and how it routes the edges between them: Graphviz's
// `dot` (libgvc) ranks a directed graph top to bottom, orders each rank to cross few edges and
// routes the edges as splines, which is what a ResNet's shortcuts or an Inception's branches
// need. Qt-free apart from the geometry types; the canvas (model_canvas.cpp) draws the result.
//
// When Graphviz cannot lay the graph out (its layout plugin missing from a broken install),
// the nodes stack in one column in their order with straight edges, and `graphviz` is false:
// the model still shows, only less clearly.
#pragma once

#include <QPainterPath>
#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <vector>

namespace mixlab::ui {

struct LayoutEdge {
  int from = 0;  // node indexes
  int to = 0;
  friend bool operator==(const LayoutEdge&, const LayoutEdge&) = default;
};

struct GraphLayout {
  std::vector<QPointF> positions;   // per node: its top-left corner
  std::vector<QPainterPath> paths;  // per edge: from the source's bottom to the target's top
  QRectF bounds;                    // every node and edge
  bool graphviz = false;            // false: the one-column fallback
  QString problem;                  // why Graphviz was not used, when it was not
};

// Lays out nodes of the given sizes (scene units) joined by `edges`, sources above targets,
// with at least `rank_gap` between one rank's bottom and the next one's top and `node_gap`
// between neighbours in a rank. Deterministic: the same input gives the same layout.
GraphLayout layout_graph(const std::vector<QSizeF>& nodes, const std::vector<LayoutEdge>& edges,
                         qreal rank_gap, qreal node_gap);

}  // namespace mixlab::ui

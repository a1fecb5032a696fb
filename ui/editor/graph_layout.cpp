#include "ui/editor/graph_layout.h"

#include <graphviz/gvc.h>

#include <QByteArray>
#include <algorithm>
#include <memory>

namespace mixlab::ui {
namespace {

constexpr double kPointsPerInch = 72.0;  // Graphviz's sizes are in inches, positions in points

// One Graphviz context for the process: it reads the plugin configuration once.
GVC_t* context() {
  static GVC_t* const gvc = gvContext();
  return gvc;
}

// libcgraph's API takes char* for names and values it does not modify.
char* text(const char* s) {
  return const_cast<char*>(s);
}

QByteArray inches(qreal scene_units) {
  return QByteArray::number(scene_units / kPointsPerInch, 'f', 4);
}

GraphLayout column_layout(const std::vector<QSizeF>& nodes, const std::vector<LayoutEdge>& edges,
                          qreal rank_gap, QString problem) {
  GraphLayout layout;
  layout.problem = std::move(problem);
  qreal width = 0;
  for (const QSizeF& size : nodes) width = std::max(width, size.width());
  qreal y = 0;
  for (const QSizeF& size : nodes) {
    layout.positions.emplace_back((width - size.width()) / 2, y);
    y += size.height() + rank_gap;
  }
  for (const LayoutEdge& e : edges) {
    const QSizeF& from = nodes[static_cast<std::size_t>(e.from)];
    const QSizeF& to = nodes[static_cast<std::size_t>(e.to)];
    QPainterPath path(layout.positions[static_cast<std::size_t>(e.from)] +
                      QPointF(from.width() / 2, from.height()));
    path.lineTo(layout.positions[static_cast<std::size_t>(e.to)] + QPointF(to.width() / 2, 0));
    layout.paths.push_back(path);
  }
  layout.bounds = QRectF(0, 0, width, std::max<qreal>(0, y - rank_gap));
  return layout;
}

struct GraphCloser {
  void operator()(Agraph_t* g) const {
    gvFreeLayout(context(), g);
    agclose(g);
  }
};

}  // namespace

GraphLayout layout_graph(const std::vector<QSizeF>& nodes, const std::vector<LayoutEdge>& edges,
                         qreal rank_gap, qreal node_gap) {
  GVC_t* gvc = context();
  if (gvc == nullptr) return column_layout(nodes, edges, rank_gap, QStringLiteral("no context"));
  const std::unique_ptr<Agraph_t, GraphCloser> graph(agopen(text("model"), Agdirected, nullptr));
  Agraph_t* g = graph.get();
  agattr(g, AGRAPH, text("rankdir"), text("TB"));
  agattr(g, AGRAPH, text("ranksep"), text(inches(rank_gap).constData()));
  agattr(g, AGRAPH, text("nodesep"), text(inches(node_gap).constData()));
  agattr(g, AGRAPH, text("splines"), text("spline"));
  // The input order of a rank's nodes decides ties: the model's order, every time.
  agattr(g, AGRAPH, text("ordering"), text("out"));
  agattr(g, AGNODE, text("shape"), text("box"));
  agattr(g, AGNODE, text("fixedsize"), text("true"));
  agattr(g, AGNODE, text("label"), text(""));
  agattr(g, AGNODE, text("width"), text("1"));
  agattr(g, AGNODE, text("height"), text("1"));
  agattr(g, AGEDGE, text("arrowhead"), text("none"));
  std::vector<Agnode_t*> gv_nodes;
  gv_nodes.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const QByteArray name = "n" + QByteArray::number(static_cast<qulonglong>(i));
    Agnode_t* n = agnode(g, text(name.constData()), 1);
    agset(n, text("width"), text(inches(nodes[i].width()).constData()));
    agset(n, text("height"), text(inches(nodes[i].height()).constData()));
    gv_nodes.push_back(n);
  }
  std::vector<Agedge_t*> gv_edges;
  gv_edges.reserve(edges.size());
  for (std::size_t i = 0; i < edges.size(); ++i) {
    // Named, so that two edges between the same nodes (x + x) stay two.
    const QByteArray name = "e" + QByteArray::number(static_cast<qulonglong>(i));
    gv_edges.push_back(agedge(g, gv_nodes[static_cast<std::size_t>(edges[i].from)],
                              gv_nodes[static_cast<std::size_t>(edges[i].to)],
                              text(name.constData()), 1));
  }
  if (gvLayout(gvc, g, "dot") != 0)
    return column_layout(nodes, edges, rank_gap,
                         QStringLiteral("Graphviz's dot layout is not available"));

  // Graphviz's y grows upwards; the scene's downwards.
  const double top = GD_bb(g).UR.y;
  const auto to_scene = [top](pointf p) { return QPointF(p.x, top - p.y); };
  GraphLayout layout;
  layout.graphviz = true;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const QPointF centre = to_scene(ND_coord(gv_nodes[i]));
    layout.positions.push_back(centre - QPointF(nodes[i].width() / 2, nodes[i].height() / 2));
    layout.bounds |= QRectF(layout.positions.back(), nodes[i]);
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const QSizeF& from_size = nodes[static_cast<std::size_t>(edges[i].from)];
    const QSizeF& to_size = nodes[static_cast<std::size_t>(edges[i].to)];
    const QPointF from = layout.positions[static_cast<std::size_t>(edges[i].from)];
    const QPointF to = layout.positions[static_cast<std::size_t>(edges[i].to)];
    const splines* spl = ED_spl(gv_edges[i]);
    QPainterPath path;
    if (spl != nullptr && spl->size > 0 && spl->list[0].size >= 4) {
      // A cubic Bézier spline: a start point, then three points per segment.
      const bezier& b = spl->list[0];
      path.moveTo(to_scene(b.list[0]));
      for (int k = 1; k + 2 < b.size; k += 3)
        path.cubicTo(to_scene(b.list[k]), to_scene(b.list[k + 1]), to_scene(b.list[k + 2]));
      // Graphviz stops at the boxes' borders, wherever on them; end on the target's top edge
      // for the arrow, and start on the source's bottom one.
      if (b.eflag) path.lineTo(to_scene(b.ep));
    } else {
      path.moveTo(from + QPointF(from_size.width() / 2, from_size.height()));
      path.lineTo(to + QPointF(to_size.width() / 2, 0));
    }
    layout.paths.push_back(path);
    layout.bounds |= path.boundingRect();
  }
  return layout;
}

}  // namespace mixlab::ui

// mixlab-icon-render: renders the SVG icon to the PNG sizes desktops look up in the hicolor
// theme, at build time, so the package ships crisp bitmaps and no runtime SVG rasterising is
// needed for panels and menus that only take PNGs.
//
//   mixlab-icon-render SVG OUT_DIR NAME SIZE...          writes OUT_DIR/SIZExSIZE/apps/NAME.png
//   mixlab-icon-render --check OUT_DIR NAME SIZE...      exits 1 unless each PNG has its size and
//                                                        is not blank
// The sizes come from the command line so that CMake's list is the only one.
#include <QColor>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QSet>
#include <QString>
#include <QSvgRenderer>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr const char* kUsage =
    "usage: mixlab-icon-render SVG OUT_DIR NAME SIZE...\n"
    "       mixlab-icon-render --check OUT_DIR NAME SIZE...\n"
    "Writes (or with --check, verifies) OUT_DIR/<SIZE>x<SIZE>/apps/NAME.png for each SIZE.\n";

QString png_path(const QString& out_dir, const QString& name, int size_px) {
  return QStringLiteral("%1/%2x%2/apps/%3.png").arg(out_dir).arg(size_px).arg(name);
}

bool render(QSvgRenderer& svg, const QString& path, int size_px) {
  QImage image(size_px, size_px, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);  // the rounded corners must stay see-through
  {
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    svg.render(&painter, QRectF(0, 0, size_px, size_px));
  }
  if (!QDir().mkpath(QFileInfo(path).absolutePath()) || !image.save(path, "PNG")) {
    std::fprintf(stderr, "mixlab-icon-render: cannot write %s\n", qPrintable(path));
    return false;
  }
  return true;
}

// A broken render (wrong viewBox, missing SVG plugin, empty file) gives a transparent or
// one-colour square; the icon is a mostly opaque square holding at least three colours.
bool check(const QString& path, int size_px) {
  const QImage image(path);
  if (image.isNull()) {
    std::fprintf(stderr, "mixlab-icon-render: %s: missing or not a PNG\n", qPrintable(path));
    return false;
  }
  if (image.width() != size_px || image.height() != size_px) {
    std::fprintf(stderr, "mixlab-icon-render: %s: %dx%d, expected %dx%d\n", qPrintable(path),
                 image.width(), image.height(), size_px, size_px);
    return false;
  }
  long long opaque_px = 0;
  QSet<QRgb> colours;
  for (int y = 0; y < size_px; ++y) {
    for (int x = 0; x < size_px; ++x) {
      const QRgb pixel = image.pixel(x, y);
      if (qAlpha(pixel) != 255) continue;
      ++opaque_px;
      colours.insert(pixel);
    }
  }
  const long long area_px = static_cast<long long>(size_px) * size_px;
  if (opaque_px * 2 < area_px || colours.size() < 3) {
    std::fprintf(stderr,
                 "mixlab-icon-render: %s looks blank (%lld of %lld px opaque, %lld colours)\n",
                 qPrintable(path), opaque_px, area_px, static_cast<long long>(colours.size()));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // A build machine has no display; the offscreen platform needs none.
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QGuiApplication app(argc, argv);

  const bool check_only = argc > 1 && std::strcmp(argv[1], "--check") == 0;
  // argv[first] is SVG when rendering, OUT_DIR when checking.
  const int first = check_only ? 2 : 1;
  const int first_size = check_only ? first + 2 : first + 3;
  if (argc <= first_size) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const QString out_dir = QString::fromLocal8Bit(argv[first_size - 2]);
  const QString name = QString::fromLocal8Bit(argv[first_size - 1]);
  std::vector<int> sizes_px;
  for (int i = first_size; i < argc; ++i) {
    bool ok = false;
    const int size_px = QString::fromLocal8Bit(argv[i]).toInt(&ok);
    if (!ok || size_px <= 0 || size_px > 1024) {
      std::fprintf(stderr, "mixlab-icon-render: bad size '%s'\n%s", argv[i], kUsage);
      return 2;
    }
    sizes_px.push_back(size_px);
  }

  bool ok = true;
  if (check_only) {
    for (const int size_px : sizes_px) ok = check(png_path(out_dir, name, size_px), size_px) && ok;
    return ok ? 0 : 1;
  }
  const QString svg_path = QString::fromLocal8Bit(argv[first]);
  QSvgRenderer svg(svg_path);
  if (!svg.isValid()) {
    std::fprintf(stderr, "mixlab-icon-render: cannot read %s as SVG\n", qPrintable(svg_path));
    return 1;
  }
  for (const int size_px : sizes_px)
    ok = render(svg, png_path(out_dir, name, size_px), size_px) && ok;
  return ok ? 0 : 1;
}

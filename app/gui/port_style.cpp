// Editor colours (see port_style.h).
#include "gui/port_style.h"

#include <QtCore/QHash>

namespace vidgraph::gui {

namespace {

// FNV-1a (32 bit) over the UTF-8 bytes: the same hue on every launch and every machine, unlike
// qHash, whose result may depend on the process seed and the CPU's hash implementation.
quint32 stableHash(const QString& key) {
  quint32 h = 2166136261u;
  for (const char c : key.toUtf8()) {
    h ^= static_cast<quint8>(c);
    h *= 16777619u;
  }
  return h;
}

QColor hashedColor(const QString& key, int saturation, int value) {
  const quint32 h = stableHash(key);
  return QColor::fromHsv(static_cast<int>(h % 360u), saturation, value);
}

}  // namespace

QColor portTypeColor(const QString& valueType) {
  static const QHash<QString, QColor> fixed = {
      {QStringLiteral("IMAGE"), QColor(0x64, 0xb5, 0xf6)},
      {QStringLiteral("VIDEO"), QColor(0xba, 0x68, 0xc8)},
      {QStringLiteral("LATENT"), QColor(0xff, 0x8a, 0x80)},
      {QStringLiteral("MODEL"), QColor(0xb3, 0x9d, 0xdb)},
      {QStringLiteral("VAE"), QColor(0xef, 0x53, 0x50)},
      {QStringLiteral("TEXT_ENCODER"), QColor(0xff, 0xd5, 0x4f)},
      {QStringLiteral("CONDITIONING"), QColor(0xff, 0xb7, 0x4d)},
      {QStringLiteral("PROMPT"), QColor(0xae, 0xd5, 0x81)},
      {QStringLiteral("PATH"), QColor(0x90, 0xa4, 0xae)},
      {QStringLiteral("*"), QColor(0xe0, 0xe0, 0xe0)},
  };
  auto it = fixed.find(valueType);
  return it != fixed.end() ? *it : hashedColor(valueType, 150, 230);
}

QColor runStateColor(NodeRunState state) {
  switch (state) {
    case NodeRunState::Idle: return QColor(0x60, 0x60, 0x66);
    case NodeRunState::Queued: return QColor(0x90, 0x90, 0x40);
    case NodeRunState::Running: return QColor(0x42, 0xa5, 0xf5);
    case NodeRunState::Cached: return QColor(0x26, 0xa6, 0x9a);
    case NodeRunState::Done: return QColor(0x66, 0xbb, 0x6a);
    case NodeRunState::Failed: return QColor(0xef, 0x53, 0x50);
    case NodeRunState::Cancelled: return QColor(0xff, 0xa7, 0x26);
    case NodeRunState::Bypassed: return QColor(0x9c, 0x7c, 0xd4);
  }
  return QColor(0x60, 0x60, 0x66);
}

QColor categoryColor(const QString& category) {
  return hashedColor(category.section(QLatin1Char('/'), 0, 0), 90, 110);
}

}  // namespace vidgraph::gui

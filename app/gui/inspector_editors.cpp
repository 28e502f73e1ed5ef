// Param editors (see inspector_editors.h).
#include "gui/inspector_editors.h"

#include <cmath>
#include <limits>

#include <QtCore/QRandomGenerator>
#include <QtGui/QRegularExpressionValidator>
#include <QtGui/QStandardItemModel>
#include <QtWidgets/QCheckBox>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QPlainTextEdit>
#include <QtWidgets/QSlider>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QToolButton>

namespace vidgraph::gui {

namespace {

using nlohmann::json;
using engine::ParamKind;

constexpr double kMaxIntSliderRange = 256;

QHBoxLayout* rowLayout(QWidget* w) {
  auto* l = new QHBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  return l;
}

json valueOrDefault(const engine::ParamSpec& spec, const json& value) {
  return value.is_null() ? spec.default_value : value;
}

constexpr int kFloatDecimals = 4;
constexpr double kFloatStep = 1e-4;  // the smallest change a float spin box shows

class NumberEditor : public ParamEditor {
 public:
  NumberEditor(const engine::ParamSpec& spec, QWidget* parent) : ParamEditor(spec, parent) {
    const bool isInt = spec.kind == ParamKind::Int;
    const double lo = spec.min.value_or(isInt ? -2147483647.0 : -1e9);
    // An open upper bound (sparsity in [0, 1)) stops one shown step below it: 0.9999, not 1.
    const double hi = spec.max ? *spec.max - (spec.max_exclusive ? (isInt ? 1.0 : kFloatStep) : 0.0)
                               : (isInt ? 2147483647.0 : 1e9);
    spin_ = new QDoubleSpinBox(this);
    spin_->setRange(lo, hi);
    spin_->setDecimals(isInt ? 0 : kFloatDecimals);
    const double intStep = spec.step > 0 ? double(spec.step) : 1.0;
    spin_->setSingleStep(isInt ? intStep : std::max(kFloatStep, (spec.min && spec.max) ? (hi - lo) / 100.0 : 0.1));
    spin_->setKeyboardTracking(false);
    auto* layout = rowLayout(this);
    // A slider only where each of its positions is a useful step: a 1–1000 steps slider is not.
    if (spec.min && spec.max && hi > lo && (!isInt || hi - lo <= kMaxIntSliderRange)) {
      slider_ = new QSlider(Qt::Horizontal, this);
      slider_->setRange(0, isInt ? int(hi - lo) : 1000);
      layout->addWidget(slider_, 2);
      QObject::connect(slider_, &QSlider::valueChanged, this, [this, lo, hi, isInt](int v) {
        const double value = onStep(isInt ? lo + v : lo + (hi - lo) * v / 1000.0);
        spin_->blockSignals(true);
        spin_->setValue(value);
        spin_->blockSignals(false);
        emitValue(value);
      });
    }
    layout->addWidget(spin_, 1);
    QObject::connect(spin_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
      const double snapped = onStep(v);
      if (!updating_ && snapped != v) {  // a typed 24 for frames (4k + 1) becomes 25; the re-set value commits
        spin_->setValue(snapped);
        return;
      }
      syncSlider(v);
      emitValue(v);
    });
  }

  void setValue(const json& value) override {
    const json v = valueOrDefault(spec(), value);
    updating_ = true;
    if (!v.is_number()) {  // not a number (a file's "eight"): say so instead of showing a number
      spin_->setSpecialValueText(QStringLiteral("invalid: %1").arg(QString::fromStdString(
          v.dump(-1, ' ', false, json::error_handler_t::replace))));
      spin_->setValue(spin_->minimum());
      syncSlider(spin_->minimum());
      updating_ = false;
      return;
    }
    spin_->setSpecialValueText(QString());
    spin_->setValue(v.get<double>());
    syncSlider(v.get<double>());
    updating_ = false;
  }

 private:
  void emitValue(double v) {
    if (spec().kind == ParamKind::Int) commit(json(static_cast<std::int64_t>(std::llround(v))));
    else commit(json(v));
  }
  // The nearest value min + k·step within the range (Int params with a step), else v.
  double onStep(double v) const {
    if (spec().kind != ParamKind::Int || spec().step <= 0) return v;
    const double lo = spin_->minimum(), step = double(spec().step);
    double snapped = lo + std::round((v - lo) / step) * step;
    if (snapped > spin_->maximum()) snapped -= step;
    return snapped;
  }
  void syncSlider(double v) {
    if (!slider_) return;
    const double lo = spin_->minimum(), hi = spin_->maximum();
    const int pos = spec().kind == ParamKind::Int ? int(std::llround(v - lo)) : int(std::llround((v - lo) / (hi - lo) * 1000.0));
    slider_->blockSignals(true);
    slider_->setValue(pos);
    slider_->blockSignals(false);
  }
  QDoubleSpinBox* spin_ = nullptr;
  QSlider* slider_ = nullptr;
};

class BoolEditor : public ParamEditor {
 public:
  BoolEditor(const engine::ParamSpec& spec, QWidget* parent) : ParamEditor(spec, parent), box_(new QCheckBox(this)) {
    rowLayout(this)->addWidget(box_);
    QObject::connect(box_, &QCheckBox::toggled, this, [this](bool on) { commit(json(on)); });
  }
  void setValue(const json& value) override {
    const json v = valueOrDefault(spec(), value);
    updating_ = true;
    box_->setChecked(v.is_boolean() && v.get<bool>());
    updating_ = false;
  }

 private:
  QCheckBox* box_;
};

class EnumEditor : public ParamEditor {
 public:
  EnumEditor(const engine::ParamSpec& spec, QWidget* parent) : ParamEditor(spec, parent), combo_(new QComboBox(this)) {
    for (const auto& c : spec.choices) combo_->addItem(QString::fromStdString(c));
    rowLayout(this)->addWidget(combo_);
    QObject::connect(combo_, &QComboBox::currentTextChanged, this,
                     [this](const QString& text) { commit(json(text.toStdString())); });
  }
  void setValue(const json& value) override {
    const json v = valueOrDefault(spec(), value);
    updating_ = true;
    const QString text = v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString();
    if (combo_->findText(text) < 0) combo_->addItem(text);  // keep an out-of-enum value visible
    combo_->setCurrentText(text);
    updating_ = false;
  }

 private:
  QComboBox* combo_;
};

class TextEditor : public ParamEditor {
 public:
  TextEditor(const engine::ParamSpec& spec, QWidget* parent) : ParamEditor(spec, parent), edit_(new QPlainTextEdit(this)) {
    edit_->setMinimumHeight(90);
    rowLayout(this)->addWidget(edit_);
    QObject::connect(edit_, &QPlainTextEdit::textChanged, this, [this] { commit(json(edit_->toPlainText().toStdString())); });
  }
  void setValue(const json& value) override {
    const json v = valueOrDefault(spec(), value);
    const QString text = v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString();
    if (text == edit_->toPlainText()) return;  // keep the cursor while typing
    updating_ = true;
    edit_->setPlainText(text);
    updating_ = false;
  }

 private:
  QPlainTextEdit* edit_;
};

// String, Seed, FilePath, FolderPath: a line edit plus an optional button.
class LineEditor : public ParamEditor {
 public:
  LineEditor(const engine::ParamSpec& spec, QWidget* parent) : ParamEditor(spec, parent), line_(new QLineEdit(this)) {
    auto* layout = rowLayout(this);
    layout->addWidget(line_, 1);
    if (spec.kind == ParamKind::Seed) {
      line_->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("-?[0-9]{1,19}")), line_));
      addButton(layout, tr("Randomise"), [this] {
        const double hi = spec_max();
        const auto v = static_cast<std::int64_t>(QRandomGenerator::global()->bounded(hi));
        line_->setText(QString::number(v));
        commitLine();
      });
    } else if (spec.kind == ParamKind::FilePath) {
      addButton(layout, QStringLiteral("…"), [this] {
        const QString filter = QString::fromStdString(this->spec().file_filter);
        const QString path = QFileDialog::getOpenFileName(this, tr("Choose a file"), line_->text(), filter);
        if (!path.isEmpty()) { line_->setText(path); commitLine(); }
      });
    } else if (spec.kind == ParamKind::FolderPath) {
      addButton(layout, QStringLiteral("…"), [this] {
        const QString path = QFileDialog::getExistingDirectory(this, tr("Choose a folder"), line_->text());
        if (!path.isEmpty()) { line_->setText(path); commitLine(); }
      });
    }
    QObject::connect(line_, &QLineEdit::editingFinished, this, [this] { commitLine(); });
  }
  void setValue(const json& value) override {
    const json v = valueOrDefault(spec(), value);
    updating_ = true;
    if (v.is_string()) line_->setText(QString::fromStdString(v.get<std::string>()));
    else if (v.is_number_integer()) line_->setText(QString::number(v.get<std::int64_t>()));
    else line_->clear();
    updating_ = false;
  }

 private:
  double spec_max() const {
    const double hi = spec().max.value_or(4294967295.0);
    return std::max(1.0, std::min(hi, 9.0e15));
  }
  void addButton(QHBoxLayout* layout, const QString& text, std::function<void()> action) {
    auto* b = new QToolButton(this);
    b->setText(text);
    layout->addWidget(b);
    QObject::connect(b, &QToolButton::clicked, this, std::move(action));
  }
  void commitLine() {
    if (spec().kind == ParamKind::Seed) {
      bool ok = false;
      const qlonglong v = line_->text().toLongLong(&ok);
      if (ok) commit(json(static_cast<std::int64_t>(v)));
    } else {
      commit(json(line_->text().toStdString()));
    }
  }
  QLineEdit* line_;
};

// A combo box of files under group titles, listed again each time its drop-down opens. A title is
// a bold item that cannot be chosen.
class RelistingComboBox : public QComboBox {
 public:
  RelistingComboBox(std::function<QList<FileChoiceGroup>()> list, QWidget* parent)
      : QComboBox(parent), list_(std::move(list)) {
    fill();
  }
  void showPopup() override {
    const QString text = currentText();  // the param's value stays what it is
    clear();
    fill();
    setEditText(text);
    QComboBox::showPopup();
  }

 private:
  void fill() {
    auto* items = qobject_cast<QStandardItemModel*>(model());
    for (const FileChoiceGroup& group : list_()) {
      auto* title = new QStandardItem(group.title);
      title->setFlags(Qt::NoItemFlags);
      title->setData(true, kGroupTitleRole);
      QFont bold = font();
      bold.setBold(true);
      title->setFont(bold);
      items->appendRow(title);
      addItems(group.paths);
    }
  }
  std::function<QList<FileChoiceGroup>()> list_;
};

// A model file param with files found in the model folders: an editable drop-down of them (listed
// again when it opens), and the picker button for any other file.
class ModelFileEditor : public ParamEditor {
 public:
  ModelFileEditor(const engine::ParamSpec& spec, std::function<QList<FileChoiceGroup>()> choices, QWidget* parent)
      : ParamEditor(spec, parent), combo_(new RelistingComboBox(std::move(choices), this)) {
    auto* layout = rowLayout(this);
    combo_->setEditable(true);
    combo_->setInsertPolicy(QComboBox::NoInsert);
    combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    layout->addWidget(combo_, 1);
    auto* browse = new QToolButton(this);
    browse->setText(QStringLiteral("…"));
    layout->addWidget(browse);
    QObject::connect(browse, &QToolButton::clicked, this, [this] {
      const QString filter = QString::fromStdString(this->spec().file_filter);
      const QString path = QFileDialog::getOpenFileName(this, tr("Choose a file"), combo_->currentText(), filter);
      if (!path.isEmpty()) {
        combo_->setEditText(path);
        commit(json(path.toStdString()));
      }
    });
    QObject::connect(combo_, qOverload<int>(&QComboBox::activated), this,
                     [this](int) { commit(json(combo_->currentText().toStdString())); });
    QObject::connect(combo_->lineEdit(), &QLineEdit::editingFinished, this,
                     [this] { commit(json(combo_->currentText().toStdString())); });
  }
  void setValue(const json& value) override {
    const json v = valueOrDefault(spec(), value);
    updating_ = true;
    combo_->setEditText(v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString());
    updating_ = false;
  }

 private:
  QComboBox* combo_;
};

}  // namespace

ParamEditor* createModelFileEditor(const engine::ParamSpec& spec, std::function<QList<FileChoiceGroup>()> choices,
                                   QWidget* parent) {
  return new ModelFileEditor(spec, std::move(choices), parent);
}

ParamEditor* createParamEditor(const engine::ParamSpec& spec, QWidget* parent) {
  switch (spec.kind) {
    case ParamKind::Int:
    case ParamKind::Float: return new NumberEditor(spec, parent);
    case ParamKind::Bool: return new BoolEditor(spec, parent);
    case ParamKind::Enum: return new EnumEditor(spec, parent);
    case ParamKind::Text: return new TextEditor(spec, parent);
    case ParamKind::String:
    case ParamKind::Seed:
    case ParamKind::FilePath:
    case ParamKind::FolderPath: return new LineEditor(spec, parent);
  }
  return new LineEditor(spec, parent);
}

}  // namespace vidgraph::gui

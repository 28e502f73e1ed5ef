// The fine-tuning library (models/train) on the tiny DiT on the CPU: gradients against finite
// differences in float64, LoRA == merged weights, checkpointing == no checkpointing, overfitting,
// bit-identical resume and cancel, caption dropout, the LoRA / full checkpoint files, and option errors.
#pragma once

#include <memory>

#include "plugins/api/plugin_loader.h"

#include <QtTest/QtTest>

class tst_train : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();

  // tst_train_grad.cpp
  void loraLayerEqualsMergedWeights();
  void loraModelEqualsMergedModel();
  void loraTargetsByPattern();
  void gradientsMatchFiniteDifferences_data();
  void gradientsMatchFiniteDifferences();
  void checkpointingGivesSameGradients_data();
  void checkpointingGivesSameGradients();
  void objectiveFormulas();

  // tst_train_loop.cpp
  void overfitDropsLoss_data();
  void overfitDropsLoss();
  void resumeIsBitIdentical();
  void cancelLeavesLoadableCheckpoint();
  void anotherRunsCheckpointIsKept();
  void stepReportsAndSchedules();
  void trainingPreparesOncePerSparsity();
  void bf16WeightsTrainThroughFp32Masters();
  void captionDropoutTrainsOnTheEmptyContext();
  void imageConditionedModelTrains();
  void damagedCheckpointsAreNamed();
  void badOptionsAreRejected_data();
  void badOptionsAreRejected();

  // tst_train_files.cpp
  void saveLoraWritesComfyLayout();
  void fullCheckpointRoundTrips();
  void keptFp8WeightsTrainLorasOnly();

 public:
  static vidgraph::plugin::AttentionBackend* backend();

 private:
  static vidgraph::plugin::LoadedPlugin* plugin_;
};

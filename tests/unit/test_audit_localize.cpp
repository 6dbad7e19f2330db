// Localization (audit/localize.hpp): a replay's first differing trace entry named as a phase, a
// layer and a tensor, one origin in computation order, and replays that did not part.
#include "reprun/audit/diff.hpp"
#include "reprun/audit/localize.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace reprun;

TEST_CASE("localize: a replay's trace entry becomes a phase, a layer and a tensor") {
  std::string layer, tensor;
  describe_trace_entry("dense_3.weight.grad", layer, tensor);
  CHECK(layer == "dense_3");
  CHECK(tensor == "weight gradient");
  describe_trace_entry("input", layer, tensor);
  CHECK(tensor == "batch input");
  Divergence original;
  original.found = true;
  original.step = 7;
  original.loss_differs_from = 7;
  DiffResult replay;
  replay.divergence.found = true;
  replay.divergence.step = 7;
  replay.divergence.trace_phase = "backward";
  replay.divergence.trace_entry = "dense_2.act.grad";
  Localization l = localize(original, replay, 5, 1);
  CHECK(l.found);
  CHECK(l.replay_from == 5);
  CHECK(l.sentence == "step 7, origin backward, layer dense_2, activation gradient (dense_2.act.grad): the first "
                     "differing value in computation order; loss differs from step 7");
  CHECK(l.note.empty());
  CHECK_FALSE(localize(original, DiffResult{}, 5, 3).found);
  CHECK(localize(original, replay, 5, 2).note.find("attempt 2") != std::string::npos);
}

TEST_CASE("localize: one origin, first in computation order; the first differing weight is named as its effect") {
  // Backward runs from the last layer to the first: dense_3's gradient differs before the update
  // makes dense_1.weight (first in model order) differ.
  Divergence original;
  original.found = true;
  original.step = 4;
  original.first_tensor = "dense_1.weight";
  original.loss_differs_from = 4;
  DiffResult replay;
  replay.divergence = original;
  replay.divergence.trace_phase = "backward";
  replay.divergence.trace_entry = "dense_3.weight.grad";
  const Localization l = localize(original, replay, 0, 1);
  REQUIRE(l.found);
  CHECK(l.layer == "dense_3");
  CHECK(l.effect == "dense_1.weight");
  CHECK(l.sentence == "step 4, origin backward, layer dense_3, weight gradient (dense_3.weight.grad): the first "
                      "differing value in computation order; dense_1.weight, the first differing tensor in model "
                      "order, is an effect of it (weights are recorded after the update); loss differs from step 4");
  // A diff of two traced logs says the same by itself.
  const Localization t = origin_in_trace(replay.divergence);
  CHECK(t.found);
  CHECK(t.sentence == l.sentence);
  // The origin in the update phase is its own first tensor: no effect to name.
  replay.divergence.trace_phase = "update";
  replay.divergence.trace_entry = "dense_1.weight";
  CHECK(localize(original, replay, 0, 1).effect.empty());
  CHECK_FALSE(origin_in_trace(Divergence{}).found);
}

TEST_CASE("localize: every trace entry name, and a replay that did not part") {
  const std::pair<const char*, const char*> names[] = {
      {"dense_1.weight.grad", "weight gradient"}, {"dense_1.bias.grad", "bias gradient"},
      {"dense_1.act.grad", "activation gradient"}, {"dense_1.z.grad", "pre-activation gradient"},
      {"dense_1.logits", "logits"}, {"dense_1.z", "pre-activation (x W + b)"}, {"dense_1.act", "activation"},
      {"dense_1.dlogits", "gradient of the loss w.r.t. the logits"}, {"dense_1.weight", "weight after the update"},
      {"dense_1.bias", "bias after the update"}};
  for (const auto& [entry, what] : names) {
    std::string layer, tensor;
    describe_trace_entry(entry, layer, tensor);
    CHECK(layer == "dense_1");
    CHECK(tensor == what);
  }
  std::string layer, tensor;
  describe_trace_entry("input", layer, tensor);
  CHECK(layer == "input");
  describe_trace_entry("something", layer, tensor);
  CHECK(layer == "something");
  CHECK(tensor == "something");
  describe_trace_entry(".z", layer, tensor); // only a suffix: not split
  CHECK(layer == ".z");
  Divergence original;
  original.found = true;
  original.step = 9;
  original.detail = "same batch; the loss differs";
  Localization none = localize(original, DiffResult{}, 8, 3);
  CHECK_FALSE(none.found);
  CHECK(none.note == "three replays from step 8 with trace full did not reproduce the divergence (it is not "
                     "deterministic); original runs part at step 9 (same batch; the loss differs)");
  original.first_tensor = "dense_2.weight";
  CHECK(localize(original, DiffResult{}, 8, 3).note.find("step 9 (dense_2.weight)") != std::string::npos);
  // The replay parted elsewhere; the loss step comes from the replay when the original has none.
  DiffResult replay;
  replay.divergence.found = true;
  replay.divergence.step = 10;
  replay.divergence.trace_phase = "forward";
  replay.divergence.trace_entry = "dense_1.z";
  replay.divergence.loss_differs_from = 11;
  Localization l = localize(original, replay, 8, 1);
  CHECK(l.sentence == "step 10, origin forward, layer dense_1, pre-activation (x W + b) (dense_1.z): the first "
                     "differing value in computation order; dense_2.weight, the first differing tensor in model order "
                     "at step 9, is an effect of it (weights are recorded after the update); loss differs from step 11");
  CHECK(l.note == "the replay (attempt 1) parted at step 10 while the original runs parted at step 9: the computation "
                  "is not deterministic, so where it parts varies");
  replay.divergence.loss_differs_from = -1; // none
  CHECK(localize(original, replay, 8, 1).sentence ==
        "step 10, origin forward, layer dense_1, pre-activation (x W + b) (dense_1.z): the first differing value in "
        "computation order; dense_2.weight, the first differing tensor in model order at step 9, is an effect of it "
        "(weights are recorded after the update)");
  // A replay that parted without trace entries cannot localize.
  replay.divergence.trace_phase.clear();
  CHECK_FALSE(localize(original, replay, 8, 1).found);
}

// The Hopper GEMM's tuning knobs, compiled into the extension only by a
// tuning build (cmake -DCUTLAX_GEMM_TUNING=ON; scripts/gpu_check.sh's tune
// step builds one): bench/gemm_tune.py sets, through cutlax.cli.tuning, the
// tile order and the promoted kernel's promotion interval that every later
// launch in the process uses in place of the heuristic's
// (tuned_gemm_schedule, which gemm.cu calls in such a build). A default
// build has neither these functions nor this state.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <atomic>
#include <string>

#include "module_part.hpp"
#include "ops/gemm_configs.hpp"

namespace nb = nanobind;

namespace cutlax::ops {
namespace {

// 0: none set, the heuristic's.
std::atomic<int> swizzle_set{0};
std::atomic<int> raster_set{0};
std::atomic<int> promotion_interval_set{0};

void bind(nb::module_& m) {
  m.def(
      "set_gemm_tile_order",
      [](int swizzle, int raster) {
        if (swizzle < 0 || swizzle > 8 || (swizzle & (swizzle - 1)) != 0) {
          throw nb::value_error(
              ("swizzle must be 0 (the heuristic's), 1, 2, 4 or 8, got " + std::to_string(swizzle))
                  .c_str());
        }
        if (raster < 0 || raster > 2) {
          throw nb::value_error(("raster must be 0 (heuristic), 1 (along M) or 2 (along N), got " +
                                 std::to_string(raster))
                                    .c_str());
        }
        swizzle_set.store(swizzle);
        raster_set.store(raster);
      },
      nb::arg("swizzle"), nb::arg("raster"),
      "Tuning build only: the order in which the SM90 GEMMs walk their output tiles, in place "
      "of the heuristic's, for every later call in this process; (0, 0) restores the "
      "heuristic.");
  m.def(
      "set_gemm_promotion_interval",
      [](int interval) {
        if (interval < 0 || interval % 4 != 0) {
          throw nb::value_error(("interval must be 0 (the default, " +
                                 std::to_string(kGemmPromotionInterval) +
                                 ") or a positive multiple of 4, got " + std::to_string(interval))
                                    .c_str());
        }
        promotion_interval_set.store(interval);
      },
      nb::arg("interval"),
      "Tuning build only: how many WGMMAs the promoted float32 GEMM runs between adding its "
      "partial sums into the float32 accumulators, in place of the default, for every later "
      "call in this process; 0 restores the default.");
}

void info(nb::dict& build_info) { build_info["gemm_tuning"] = true; }

CUTLAX_MODULE_PART(bind, info);

}  // namespace

GemmSchedule tuned_gemm_schedule(GemmSchedule schedule) {
  if (const int swizzle = swizzle_set.load(std::memory_order_relaxed); swizzle > 0) {
    schedule.order = {swizzle, static_cast<GemmRaster>(raster_set.load(std::memory_order_relaxed))};
  }
  if (const int interval = promotion_interval_set.load(std::memory_order_relaxed); interval > 0) {
    schedule.promotion_interval = interval;
  }
  return schedule;
}

}  // namespace cutlax::ops

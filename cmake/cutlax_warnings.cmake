# Warnings are errors-in-waiting in our own code; third-party headers come in as
# SYSTEM includes so theirs stay out of the log.
include_guard(GLOBAL)
add_library(cutlax_warnings INTERFACE)
target_compile_options(cutlax_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra -Xptxas=-warn-spills>)

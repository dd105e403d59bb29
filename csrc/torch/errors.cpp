// Turns core errors into PyTorch exceptions: the only place this happens.
#include <c10/util/Exception.h>

#include "torch/bridge.h"

namespace torch_tpu {

void raise_if_error(tt_error* err) {
  if (!err) return;
  std::string msg = tt_error_message(err);
  tt_error_code code = tt_error_code_of(err);
  tt_error_free(err);
  switch (code) {
    case TT_ERR_TYPE: TORCH_CHECK_TYPE(false, msg);
    case TT_ERR_INDEX: TORCH_CHECK_INDEX(false, msg);
    case TT_ERR_NOT_IMPLEMENTED: TORCH_CHECK_NOT_IMPLEMENTED(false, msg);
    case TT_ERR_OUT_OF_MEMORY: TORCH_CHECK_WITH(OutOfMemoryError, false, msg);
    default: TORCH_CHECK(false, msg);
  }
}

}  // namespace torch_tpu

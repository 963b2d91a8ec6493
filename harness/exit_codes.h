// harness/exit_codes.h — trainbench's exit status, one per cause (README "Exit codes").
#pragma once

namespace tb {

enum ExitCode : int {
  kExitOk = 0,
  kExitRunFailed = 1,   // a configuration failed or diverged; its `failed: why` row is written
  kExitBadInput = 2,    // a bad flag, file or dataset: one line naming it, nothing written
  kExitJobAborted = 3,  // a multi-process job was ended: a rank failed alone, died, or a collective timed out
  kExitIoError = 74,    // an output could not be written (disk full, size limit): files end at their last whole row
  kExitSigint = 130,    // interrupted by SIGINT (128 + 2): rows of finished repetitions are kept
  kExitSigterm = 143,   // ended by SIGTERM (128 + 15), e.g. a batch scheduler's cancel: the same
};

}  // namespace tb

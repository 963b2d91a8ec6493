// harness/comm/mpi_session.h — MPI lifetime for the process, and the MPI communicator.
// Only compiled when MPI was found (TB_HAVE_MPI). The session initialises MPI once
// (MPI_THREAD_MULTIPLE requested: the watchdog thread may call MPI_Abort) and
// finalises it at exit; a watchdog aborts the whole job when one collective takes
// longer than the deadline, so a hung or dead rank never hangs the others.
#pragma once

#include <memory>

#include "harness/comm/communicator.h"

namespace tb {

// Initialises MPI on first call (idempotent). deadline_s: seconds one collective
// may take before the watchdog aborts the job, and (at least 30 s) MPI_Init, which
// waits for every rank to join (0 disables both).
std::shared_ptr<Communicator> mpi_world(double deadline_s);

// True once mpi_world() has initialised MPI in this process.
bool mpi_active();

// Finalises MPI if it was initialised (called at the end of main()).
void mpi_finalize_if_initialised();

}  // namespace tb

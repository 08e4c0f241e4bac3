/* Is an MPS control daemon there? Asked by run_suite (runner/suite/gpu/mps.h) and by a training
 * job before its CUDA context exists (runner/train/workload_image.c). Host only, no CUDA. */
#ifndef SUITE_MPS_PROBE_H
#define SUITE_MPS_PROBE_H

#include <stddef.h>

#define MPS_DEFAULT_PIPE_DIR "/tmp/nvidia-mps"
/* The hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS) an MPS client asks for: the server shares
 * about 120 among its clients. */
#define MPS_CLIENT_CONNECTIONS 8

/* 1 when a control daemon answers in pipe_dir (its socket exists and its pid is alive). */
int mps_daemon_running(const char *pipe_dir);
/* The pipe folder that a plain CUDA program would use ($CUDA_MPS_PIPE_DIRECTORY or the default). */
const char *mps_default_pipe_dir(void);
/* The control daemon's pid from its pid file in pipe_dir, 0 when there is none. */
long mps_daemon_pid(const char *pipe_dir);
/* Alive and not a zombie: a daemon that exited stays a zombie until whoever adopted it reaps it. */
int mps_pid_alive(long pid);
/* Reads /proc/<pid>/stat into line and returns where its fields after the name start (at the
 * name's closing ')'), or NULL when it cannot be read. */
const char *mps_proc_stat(long pid, char *line, size_t size);

#endif

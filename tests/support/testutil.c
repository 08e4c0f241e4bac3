#define _XOPEN_SOURCE 700
#include "tests/support/testutil.h"

#include <cjson/cJSON.h>

#include <ftw.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "data/dataset.h"
#include "kernels/check.h"
#include "models/core/context.h"
#include "base/rng.h"

/* cmocka's failure entry points (cmocka.h needs setjmp.h and stdarg.h first): inside a test they
 * end the test as failed; outside one, the program. */
void _fail(const char *const file, const int line);
void print_error(const char *const format, ...);

void test_expect_cmp(test_cmp_op op, double a, double b, const char *text_a, const char *text_b, const char *file,
                     int line) {
    static const char *const names[] = {"<", "<=", ">", ">=", "==", "!="};
    int ok = op == TEST_LT ? a < b : op == TEST_LE ? a <= b : op == TEST_GT ? a > b : op == TEST_GE ? a >= b
           : op == TEST_EQ ? a == b : a != b;
    if (ok) return;
    print_error("expected %s (= %.9g) %s %s (= %.9g)\n", text_a, a, names[op], text_b, b);
    _fail(file, line);
}

void test_expect_near(double a, double b, double tol, const char *text_a, const char *text_b, const char *file, int line) {
    if (fabs(a - b) <= tol) return;
    print_error("expected %s (= %.9g) within %.3g of %s (= %.9g): they differ by %.3g\n", text_a, a, tol, text_b, b,
                fabs(a - b));
    _fail(file, line);
}

char *test_read_text(const char *path, char *err, size_t err_size) {
    uint8_t *bytes = NULL;
    size_t size = 0;
    if (dataset_read_file(path, (size_t)1 << 22, &bytes, &size, err, err_size) != 0) return NULL;
    char *text = malloc(size + 1);
    if (text) memcpy(text, bytes, size), text[size] = 0;
    else snprintf(err, err_size, "out of memory reading %s", path);
    free(bytes);
    return text;
}

cJSON *test_read_json(const char *path, char *err, size_t err_size) {
    char *text = test_read_text(path, err, err_size);
    if (!text) return NULL;
    cJSON *parsed = cJSON_Parse(text);
    free(text);
    if (!parsed) snprintf(err, err_size, "%s is not JSON", path);
    return parsed;
}

void test_write_file(const char *path, const void *bytes, size_t size) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(bytes, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) {
        fprintf(stderr, "cannot write the fixture %s\n", path);
        exit(1);
    }
}

void test_write_text(const char *path, const char *text) { test_write_file(path, text, strlen(text)); }

void test_write_json(const char *path, const cJSON *root) {
    char *text = cJSON_Print(root);
    if (!text) {
        fprintf(stderr, "cannot print the fixture %s\n", path);
        exit(1);
    }
    test_write_text(path, text);
    free(text);
}

void test_require_gpu(void) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        printf("no CUDA device (%s): skipped\n", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        exit(77);
    }
}

uint64_t test_rand_u64(uint64_t *s) { return rng_next(s); }
float test_rand_uniform(uint64_t *s, float lo, float hi) { return lo + (hi - lo) * rng_uniform(s); }
float test_rand_normal(uint64_t *s) { return rng_normal(s); }

void test_fill_uniform(float *x, size_t n, uint64_t *s, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = test_rand_uniform(s, lo, hi);
}

double test_rel_err(const float *a, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i])) return INFINITY;
        double d = a[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

double test_rel_err_f(const float *a, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(ref[i])) return INFINITY;
        double d = (double)a[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

float *test_to_device(const float *host, size_t n) {
    float *d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&d, n * sizeof(float) + 16));
    CHECK_CUDA(cudaMemcpy(d, host, n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

void test_to_host(float *host, const float *device, size_t n) {
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost));
}

uint16_t test_bf16_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet, not rounded to inf */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float test_float_of_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void test_poison(float *device, size_t n) {
    CHECK_CUDA(cudaMemset(device, 0xFF, n * sizeof(float))); /* 0xFFFFFFFF is a NaN */
}

void test_tmpdir(char *path, size_t size) {
    const char *base = getenv("TMPDIR");
    snprintf(path, size, "%s/suite-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        exit(1);
    }
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

void test_rmtree(const char *path) {
    if (strstr(path, "suite-test-") == NULL) return; /* only folders test_tmpdir made */
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void test_fake_mps_on_path(const char *dir, const char *fake_train, char *bin, size_t size) {
    snprintf(bin, size, "%s/bin", dir);
    mkdir(bin, 0755);
    char link[4096], path[8192];
    snprintf(link, sizeof link, "%s/nvidia-cuda-mps-control", bin);
    if (symlink(fake_train, link) != 0) {
        perror(link);
        exit(1);
    }
    snprintf(path, sizeof path, "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
}

int test_process_alive(long pid, const char *comm, long *ppid) {
    char path[64], line[512] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f) return 0;
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    fclose(f);
    const char *name = strchr(line, '('), *after = strrchr(line, ')'); /* "pid (comm) S ppid ..." */
    if (!name || !after || after[1] != ' ' || after[2] == 'Z') return 0;
    if (comm && ((size_t)(after - name - 1) != strlen(comm) || strncmp(name + 1, comm, strlen(comm)) != 0)) return 0;
    if (ppid && sscanf(after + 2, "%*c %ld", ppid) != 1) *ppid = 0;
    return 1;
}

extern char **environ;

int test_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        fprintf(stderr, "no free TCP port on 127.0.0.1\n");
        exit(1);
    }
    close(fd);
    return ntohs(a.sin_port);
}

int test_run(char *const argv[], char *out, size_t out_size, char *err, size_t err_size) {
    int out_pipe[2], err_pipe[2];
    if (pipe(out_pipe) || pipe(err_pipe)) return -1;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
    posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out_pipe[1]), close(err_pipe[1]);
    if (rc != 0) {
        close(out_pipe[0]), close(err_pipe[0]);
        return -1;
    }
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    char *bufs[2] = {out, err};
    size_t sizes[2] = {out_size, err_size}, used[2] = {0, 0};
    int open_count = 2;
    while (open_count > 0 && poll(fds, 2, -1) > 0) {
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
            char chunk[4096];
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_count--;
                continue;
            }
            size_t room = sizes[i] > used[i] + 1 ? sizes[i] - used[i] - 1 : 0;
            size_t take = (size_t)n < room ? (size_t)n : room;
            memcpy(bufs[i] + used[i], chunk, take);
            used[i] += take;
        }
    }
    if (out_size) out[used[0]] = 0;
    if (err_size) err[used[1]] = 0;
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const char *test_binary(const char *name) {
    static char path[4096];
    const char *dir = getenv("SUITE_BINARY_DIR");
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : SUITE_BINARY_DIR, name);
    return path;
}

int test_run_binary(const char *name, char *out, size_t out_size, char *err, size_t err_size, ...) {
    char *argv[64] = {(char *)test_binary(name)};
    int argc = 1;
    va_list ap;
    va_start(ap, err_size);
    for (const char *a = va_arg(ap, const char *); a && argc < 63; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    return test_run(argv, out, out_size, err, err_size);
}

const char *test_two_green_partitions(void) {
    static char text[32];
    char e[512];
    int device_sms, unit, groups;
    if (context_sm_granularity(0, &device_sms, &unit, &groups, e, sizeof e) != 0) {
        fprintf(stderr, "%s\n", e);
        abort();
    }
    snprintf(text, sizeof text, "%d,%d", unit * (groups / 2), unit * (groups / 2));
    return text;
}

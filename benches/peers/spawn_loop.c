/* The baseline of the serving-cost bench: a bare spawn loop in C. CONCURRENCY workers (threads) each spawn the
 * trivial application command with posix_spawn, read its output through a pipe to EOF and wait for it, CALLS times
 * in all; prints the calls per second. No MCP, no JSON, no runtime: the ceiling a server of CLI tools can approach.
 *
 * Usage: spawn_loop APP CALLS CONCURRENCY
 */
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static const char *app;
static atomic_long left;

static void *worker(void *unused) {
    (void)unused;
    char buf[4096];
    while (atomic_fetch_sub(&left, 1) > 0) {
        int fds[2];
        if (pipe(fds) != 0) { perror("pipe"); exit(1); }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", 0, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        posix_spawn_file_actions_addclose(&fa, fds[1]);
        char *argv[] = {(char *)app, "echo", "--", "hello", NULL};
        pid_t pid;
        if (posix_spawn(&pid, app, &fa, NULL, argv, environ) != 0) { perror("posix_spawn"); exit(1); }
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        while (read(fds[0], buf, sizeof buf) > 0) {}
        close(fds[0]);
        int status;
        waitpid(pid, &status, 0);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: spawn_loop APP CALLS CONCURRENCY\n"); return 2; }
    app = argv[1];
    long calls = atol(argv[2]);
    int n = atoi(argv[3]);
    atomic_store(&left, calls);
    pthread_t threads[256];
    if (n < 1 || n > 256) { fprintf(stderr, "concurrency 1..256\n"); return 2; }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%.1f\n", calls / secs);
    return 0;
}

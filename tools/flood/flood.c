/*
 * flood: opens COUNT TCP connections to HOST:PORT as fast as the kernel
 * takes them, never sends a byte, and watches each until it is answered
 * (a `bye` frame, EOF or a reset) or WATCH_S seconds after it connected.
 * The load side of tools/flood_trial.py (issue 28, scope point 8).
 *
 *   flood HOST PORT COUNT WATCH_S [SOURCE]
 *
 * One line per connection on stdout, in no particular order:
 *
 *   OUTCOME ATTEMPT_US CONNECTED_US CONNECT_US
 *
 * OUTCOME: `refused` (an `error` `server_busy` and a `bye` `server_busy`),
 * `bye_REASON` (any other bye), `closed` (EOF before a bye), `reset`,
 * `silent` (nothing by the end of the watch), `connect_failed`.
 * ATTEMPT_US: microseconds from the connect() call to the answer (-1 for
 * silent or failed); CONNECTED_US: from the connect's completion to the
 * answer; CONNECT_US: connect() to its completion (or to the failure).
 *
 * In C, single-threaded with epoll, so that what is measured is the server
 * and not the client: a Python asyncio client spent seconds of its own per
 * thousand connections. Every wait is bounded (CONNECT_TIMEOUT_S for a
 * connect, WATCH_S after it). Linux only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_S 60
#define BUFFER_BYTES 1024

enum state { CONNECTING, WATCHING, DONE };

struct conn {
    int fd;
    enum state state;
    int64_t attempted, connected, ended;
    const char *outcome;
    char reason[32];
    int length;
    unsigned char buffer[BUFFER_BYTES];
};

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Looks at the whole frames received so far: sets the outcome once a `bye` is in. */
static void look(struct conn *c) {
    int pos = 0, busy = 0;
    while (pos + 4 <= c->length) {
        uint32_t n = ((uint32_t)c->buffer[pos] << 24) | ((uint32_t)c->buffer[pos + 1] << 16) |
                     ((uint32_t)c->buffer[pos + 2] << 8) | c->buffer[pos + 3];
        if (n > BUFFER_BYTES || pos + 4 + (int)n > c->length) return;
        char body[BUFFER_BYTES + 1];
        memcpy(body, c->buffer + pos + 4, n);
        body[n] = 0;
        if (strstr(body, "\"type\":\"error\"") && strstr(body, "\"code\":\"server_busy\"")) busy = 1;
        if (strstr(body, "\"type\":\"bye\"")) {
            const char *r = strstr(body, "\"reason\":\"");
            snprintf(c->reason, sizeof c->reason, "%s", r ? r + 10 : "?");
            char *quote = strchr(c->reason, '"');
            if (quote) *quote = 0;
            c->outcome = busy && strcmp(c->reason, "server_busy") == 0 ? "refused" : "bye";
            return;
        }
        pos += 4 + (int)n;
    }
}

static void finish(int epoll, struct conn *c, const char *outcome, int64_t at) {
    if (outcome) c->outcome = outcome;
    c->state = DONE;
    c->ended = at;
    epoll_ctl(epoll, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
}

static void handle(int epoll, struct conn *c, uint32_t events) {
    int64_t t = now_us();
    if (c->state == CONNECTING) {
        int error = 0;
        socklen_t len = sizeof error;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &len);
        if (error || (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN))) {
            c->connected = t;
            finish(epoll, c, "connect_failed", t);
            return;
        }
        c->connected = t;
        c->state = WATCHING;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        epoll_ctl(epoll, EPOLL_CTL_MOD, c->fd, &ev);
        if (!(events & (EPOLLIN | EPOLLRDHUP))) return;
    }
    if (c->state != WATCHING) return;
    for (;;) {
        unsigned char scratch[BUFFER_BYTES];
        ssize_t n = recv(c->fd, scratch, sizeof scratch, 0);
        if (n > 0) {
            int room = BUFFER_BYTES - c->length;
            int take = n < room ? (int)n : room;
            memcpy(c->buffer + c->length, scratch, take);
            c->length += take;
            look(c);
            if (c->outcome) {
                finish(epoll, c, NULL, t);
                return;
            }
            continue;
        }
        if (n == 0) {
            finish(epoll, c, "closed", t);
            return;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        finish(epoll, c, "reset", t);
        return;
    }
}

static void poll_once(int epoll, int timeout_ms, int *done) {
    struct epoll_event events[256];
    int n = epoll_wait(epoll, events, 256, timeout_ms);
    for (int i = 0; i < n; i++) {
        struct conn *c = events[i].data.ptr;
        if (c->state == DONE) continue;
        handle(epoll, c, events[i].events);
        if (c->state == DONE) (*done)++;
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: flood HOST PORT COUNT WATCH_S [SOURCE]\n");
        return 2;
    }
    struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    int count = atoi(argv[3]);
    int64_t watch = (int64_t)(atof(argv[4]) * 1e6);
    struct sockaddr_in source = {.sin_family = AF_INET};
    int bind_source = argc > 5;
    if (inet_pton(AF_INET, argv[1], &server.sin_addr) != 1 || count < 1 ||
        (bind_source && inet_pton(AF_INET, argv[5], &source.sin_addr) != 1)) {
        fprintf(stderr, "flood: bad host, count or source\n");
        return 2;
    }
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    if ((rlim_t)count + 16 > limit.rlim_cur) {
        fprintf(stderr, "flood: %d connections need more than the descriptor limit %lu\n", count,
                (unsigned long)limit.rlim_cur);
        return 2;
    }
    struct conn *conns = calloc((size_t)count, sizeof *conns);
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    if (!conns || epoll < 0) return 1;
    int done = 0;
    for (int i = 0; i < count; i++) {
        struct conn *c = &conns[i];
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        c->attempted = now_us();
        if (c->fd < 0) {
            c->state = DONE;
            c->outcome = "connect_failed";
            c->connected = c->ended = c->attempted;
            done++;
            continue;
        }
        if (bind_source) bind(c->fd, (struct sockaddr *)&source, sizeof source);
        int rc = connect(c->fd, (struct sockaddr *)&server, sizeof server);
        if (rc < 0 && errno != EINPROGRESS) {
            finish(epoll, c, "connect_failed", now_us());
            c->connected = c->ended;
            done++;
            continue;
        }
        c->state = CONNECTING;
        struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        epoll_ctl(epoll, EPOLL_CTL_ADD, c->fd, &ev);
        /* Answers are read while connecting, so that their times are not the client's. */
        if (i % 64 == 63) poll_once(epoll, 0, &done);
    }
    while (done < count) {
        poll_once(epoll, 50, &done);
        int64_t t = now_us();
        for (int i = 0; i < count; i++) {
            struct conn *c = &conns[i];
            if (c->state == CONNECTING && t - c->attempted > CONNECT_TIMEOUT_S * 1000000LL) {
                finish(epoll, c, "connect_failed", t);
                c->connected = t;
                done++;
            } else if (c->state == WATCHING && t - c->connected > watch) {
                finish(epoll, c, "silent", t);
                done++;
            }
        }
    }
    for (int i = 0; i < count; i++) {
        struct conn *c = &conns[i];
        char outcome[48];
        if (c->outcome && strcmp(c->outcome, "bye") == 0) snprintf(outcome, sizeof outcome, "bye_%s", c->reason);
        else snprintf(outcome, sizeof outcome, "%s", c->outcome ? c->outcome : "silent");
        int answered = strcmp(outcome, "silent") != 0 && strcmp(outcome, "connect_failed") != 0;
        printf("%s %lld %lld %lld\n", outcome, answered ? (long long)(c->ended - c->attempted) : -1LL,
               answered ? (long long)(c->ended - c->connected) : -1LL, (long long)(c->connected - c->attempted));
    }
    return 0;
}

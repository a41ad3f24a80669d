// Heap held per idle server-side SSL (TLS 1.3, P-256, memory BIOs, RELEASE_BUFFERS), set up as
// UV.TLSContext/TLSStream do, with in-process handshakes (no sockets): what OpenSSL itself keeps.
//   cc -O2 -o sslmem docs/bench/sslmem.c -lssl -lcrypto && ./sslmem PKI_DIR [N]   (PKI_DIR: server.pem, server.key, ca.pem)
//   NO_RELEASE=1: without SSL_MODE_RELEASE_BUFFERS; TLS12=1: TLS 1.2 at most.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void pump(BIO *from, BIO *to) { char buf[65536]; int n; while ((n = BIO_read(from, buf, sizeof buf)) > 0) BIO_write(to, buf, n); }
static long rss(void) { FILE *f = fopen("/proc/self/status", "r"); char l[256]; long v = 0; while (fgets(l, sizeof l, f)) if (!strncmp(l, "VmRSS:", 6)) v = atol(l + 6) * 1024; fclose(f); return v; }
int main(int argc, char **argv) {
    int n = argc > 2 ? atoi(argv[2]) : 2000;
    const char *dir = argv[1];
    char cert[512], key[512], ca[512];
    snprintf(cert, sizeof cert, "%s/server.pem", dir); snprintf(key, sizeof key, "%s/server.key", dir); snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    SSL_CTX *s = SSL_CTX_new(TLS_server_method()), *c = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(s, TLS1_2_VERSION);
    if (!getenv("NO_RELEASE")) SSL_CTX_set_mode(s, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (getenv("TLS12")) SSL_CTX_set_max_proto_version(s, TLS1_2_VERSION);
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF); SSL_CTX_set_num_tickets(s, 0);
    if (SSL_CTX_use_certificate_chain_file(s, cert) != 1 || SSL_CTX_use_PrivateKey_file(s, key, SSL_FILETYPE_PEM) != 1) { ERR_print_errors_fp(stderr); return 1; }
    SSL_CTX_load_verify_locations(c, ca, NULL); SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
    // warm up one connection so one-time allocations are not counted
    SSL **keep = calloc(n + 1, sizeof *keep);
    struct mallinfo2 m0; long r0 = 0; size_t biomax = 0;
    for (int i = -1; i < n; i++) {
        if (i == 0) { m0 = mallinfo2(); r0 = rss(); }
        SSL *sv = SSL_new(s), *cl = SSL_new(c);
        BIO *srb = BIO_new(BIO_s_mem()), *swb = BIO_new(BIO_s_mem()), *crb = BIO_new(BIO_s_mem()), *cwb = BIO_new(BIO_s_mem());
        BIO_set_mem_eof_return(srb, -1); BIO_set_mem_eof_return(swb, -1); BIO_set_mem_eof_return(crb, -1); BIO_set_mem_eof_return(cwb, -1);
        SSL_set_bio(sv, srb, swb); SSL_set_bio(cl, crb, cwb);
        SSL_set_accept_state(sv); SSL_set_connect_state(cl); SSL_set_tlsext_host_name(cl, "localhost"); SSL_set1_host(cl, "localhost");
        for (int step = 0; step < 10 && !(SSL_is_init_finished(sv) && SSL_is_init_finished(cl)); step++) {
            SSL_do_handshake(cl); pump(cwb, srb); SSL_do_handshake(sv); pump(swb, crb);
        }
        if (!SSL_is_init_finished(sv)) { ERR_print_errors_fp(stderr); return 2; }
        // hello + subscribe in, their replies out, as an idle subscriber's life begins
        char req[120], rep[400], buf[4096]; memset(req, 'q', sizeof req); memset(rep, 'r', sizeof rep);
        SSL_write(cl, req, sizeof req); pump(cwb, srb); SSL_read(sv, buf, sizeof buf);
        SSL_write(sv, rep, sizeof rep); pump(swb, crb); SSL_read(cl, buf, sizeof buf);
        SSL_read(sv, buf, sizeof buf);  // WANT_READ: idle
        SSL_free(cl);
        BUF_MEM *a, *b; BIO_get_mem_ptr(srb, &a); BIO_get_mem_ptr(swb, &b);
        if (i >= 0) { biomax += a->max + b->max; keep[i] = sv; } else keep[n] = sv;
    }
    struct mallinfo2 m1 = mallinfo2(); long r1 = rss();
    printf("{\"connections\": %d, \"heap_in_use_per_connection\": %zu, \"rss_per_connection\": %ld, \"bio_capacity_per_connection\": %zu}\n",
           n, (m1.uordblks - m0.uordblks) / n, (r1 - r0) / n, biomax / n);
    return 0;
}

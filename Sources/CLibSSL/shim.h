#ifndef OUTATIME_CLIBSSL_SHIM_H
#define OUTATIME_CLIBSSL_SHIM_H
// OpenSSL 3 for the UV module only (TLSContext, TLSStream, SHA256).
// OpenSSL spells several calls as macros over SSL_ctrl/BIO_ctrl, which Swift
// cannot import: the inline functions below name them.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

static inline int outatime_ssl_set_sni(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

static inline int outatime_ctx_set_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

static inline void outatime_ctx_set_server_preference(SSL_CTX *ctx) {
    // The server's order of TLS 1.2 suites decides, not the client's; no
    // renegotiation (nothing here needs it, and it has had its attacks);
    // no TLS 1.2 session tickets (nothing resumes: the cache is off too).
    SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
}

static inline void outatime_ctx_set_modes(SSL_CTX *ctx) {
    // Idle connections give their record buffers back; writes may come from
    // a buffer other than the one of a retried write.
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

static inline void outatime_ctx_disable_session_cache(SSL_CTX *ctx) {
    // No resumption: no per-server session cache holding memory.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
}

static inline size_t outatime_bio_pending(BIO *bio) {
    return (size_t)BIO_pending(bio);
}

static inline void outatime_bio_set_eof_retry(BIO *bio) {
    // An empty memory BIO means "wait for more bytes", not end of file.
    BIO_set_mem_eof_return(bio, -1);
}

static inline unsigned long outatime_name_flags_rfc2253(void) {
    return XN_FLAG_RFC2253;
}

#endif

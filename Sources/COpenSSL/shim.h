#include <pthread.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>

/* SHA-256 (`kidledger_sha256`, 32 bytes) and SHA-1 (`kidledger_sha1`, 20 bytes) of `count`
 * bytes at `input` into `output`, each through a digest context the calling thread keeps
 * and an algorithm fetched once: EVP_Digest sets up and frees a context and looks the
 * algorithm up on every call, and a context shared between threads needs a lock they then
 * queue on. A thread's contexts are freed when the thread ends. 1 on success, 0 on failure.
 * (SHA-1 only names UUIDv5 ids; OpenSSL's uses the CPU's SHA instructions where it has them.) */
typedef struct {
    pthread_key_t key;
    EVP_MD *algorithm;
    int ready;
} kidledger_digest_state;

/* Function-local statics: a header's file-scope statics are not emitted for Swift. */
static inline kidledger_digest_state *kidledger_sha256_shared(void) {
    static kidledger_digest_state state;
    return &state;
}

static inline kidledger_digest_state *kidledger_sha1_shared(void) {
    static kidledger_digest_state state;
    return &state;
}

static inline void kidledger_digest_free(void *context) { EVP_MD_CTX_free((EVP_MD_CTX *)context); }

static inline void kidledger_digest_setup(kidledger_digest_state *s, const char *name) {
    if (pthread_key_create(&s->key, kidledger_digest_free) != 0) return;
    s->algorithm = EVP_MD_fetch(NULL, name, NULL);
    s->ready = s->algorithm != NULL;
}

static inline void kidledger_sha256_setup(void) { kidledger_digest_setup(kidledger_sha256_shared(), "SHA256"); }
static inline void kidledger_sha1_setup(void) { kidledger_digest_setup(kidledger_sha1_shared(), "SHA1"); }

static inline int kidledger_digest(kidledger_digest_state *s, const void *input, size_t count, unsigned char *output) {
    if (!s->ready) return 0;
    EVP_MD_CTX *context = (EVP_MD_CTX *)pthread_getspecific(s->key);
    if (context == NULL) {
        if ((context = EVP_MD_CTX_new()) == NULL) return 0;
        if (pthread_setspecific(s->key, context) != 0) { EVP_MD_CTX_free(context); return 0; }
    }
    return EVP_DigestInit_ex2(context, s->algorithm, NULL) == 1
        && EVP_DigestUpdate(context, input, count) == 1
        && EVP_DigestFinal_ex(context, output, NULL) == 1;
}

static inline int kidledger_sha256(const void *input, size_t count, unsigned char *output) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (pthread_once(&once, kidledger_sha256_setup) != 0) return 0;
    return kidledger_digest(kidledger_sha256_shared(), input, count, output);
}

static inline int kidledger_sha1(const void *input, size_t count, unsigned char *output) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (pthread_once(&once, kidledger_sha1_setup) != 0) return 0;
    return kidledger_digest(kidledger_sha1_shared(), input, count, output);
}

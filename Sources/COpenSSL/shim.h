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

/* SHA-256 of `count` bytes at `input` into `output` (32 bytes) through a digest context
 * the calling thread keeps and an algorithm fetched once: EVP_Digest sets up and frees a
 * context and looks the algorithm up on every call, and a context shared between threads
 * needs a lock they then queue on. A thread's context is freed when the thread ends.
 * 1 on success, 0 on failure. */
typedef struct {
    pthread_key_t key;
    EVP_MD *algorithm;
    int ready;
} kidledger_sha256_state;

/* Function-local statics: a header's file-scope statics are not emitted for Swift. */
static inline kidledger_sha256_state *kidledger_sha256_shared(void) {
    static kidledger_sha256_state state;
    return &state;
}

static inline void kidledger_sha256_free(void *context) { EVP_MD_CTX_free((EVP_MD_CTX *)context); }

static inline void kidledger_sha256_setup(void) {
    kidledger_sha256_state *s = kidledger_sha256_shared();
    if (pthread_key_create(&s->key, kidledger_sha256_free) != 0) return;
    s->algorithm = EVP_MD_fetch(NULL, "SHA256", NULL);
    s->ready = s->algorithm != NULL;
}

static inline int kidledger_sha256(const void *input, size_t count, unsigned char *output) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    kidledger_sha256_state *s = kidledger_sha256_shared();
    if (pthread_once(&once, kidledger_sha256_setup) != 0 || !s->ready) return 0;
    EVP_MD_CTX *context = (EVP_MD_CTX *)pthread_getspecific(s->key);
    if (context == NULL) {
        if ((context = EVP_MD_CTX_new()) == NULL) return 0;
        if (pthread_setspecific(s->key, context) != 0) { EVP_MD_CTX_free(context); return 0; }
    }
    return EVP_DigestInit_ex2(context, s->algorithm, NULL) == 1
        && EVP_DigestUpdate(context, input, count) == 1
        && EVP_DigestFinal_ex(context, output, NULL) == 1;
}

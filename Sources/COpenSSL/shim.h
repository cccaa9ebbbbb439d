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
 * and algorithm kept by the calling thread: EVP_Digest sets up and frees a context and
 * looks the algorithm up on every call, and a context shared between threads needs a lock
 * they then queue on. One context per thread that hashes (they live as long as the
 * thread). 1 on success, 0 on failure. */
static inline int kidledger_sha256(const void *input, size_t count, unsigned char *output) {
    static _Thread_local EVP_MD *algorithm = NULL;
    static _Thread_local EVP_MD_CTX *context = NULL;
    if (algorithm == NULL && (algorithm = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL) return 0;
    if (context == NULL && (context = EVP_MD_CTX_new()) == NULL) return 0;
    return EVP_DigestInit_ex2(context, algorithm, NULL) == 1 && EVP_DigestUpdate(context, input, count) == 1
        && EVP_DigestFinal_ex(context, output, NULL) == 1;
}

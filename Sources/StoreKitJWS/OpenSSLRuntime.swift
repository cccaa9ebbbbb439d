import COpenSSL

/// Process-wide OpenSSL set-up.
public enum OpenSSLRuntime {
    /// Initialises libcrypto without its exit-time cleanup. A server's worker threads can
    /// still be inside OpenSSL (hashing a token, verifying a JWS) while the main thread
    /// returns from `main`; the default `atexit` handler would then free state under them.
    /// Call before any other OpenSSL use; later calls do nothing. Returns false when
    /// OpenSSL refused to initialise.
    @discardableResult
    public static func initialize() -> Bool {
        OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
    }
}

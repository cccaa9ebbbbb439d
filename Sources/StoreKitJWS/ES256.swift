import COpenSSL

/// ES256 (ECDSA P-256 with SHA-256, RFC 7518 section 3.4) primitives over OpenSSL.
enum ES256 {
    /// Length of the raw `r ‖ s` JWS signature.
    static let signatureLength = 64

    /// Whether `key` is an EC key on P-256.
    static func isP256(_ key: OpaquePointer) -> Bool {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
            ERR_clear_error()
            return false
        }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256"
    }

    /// Converts raw `r ‖ s` to a DER `ECDSA-Sig-Value`.
    static func derSignature(raw: [UInt8]) -> [UInt8]? {
        guard raw.count == signatureLength else { return nil }
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (BN_bin2bn(buffer.baseAddress, 32, nil), BN_bin2bn(buffer.baseAddress! + 32, 32, nil))
        }
        guard let r, let s else {
            BN_free(r); BN_free(s)
            return nil
        }
        // On success the signature owns r and s.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r); BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { out -> Int32 in
            var cursor = out.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }

    /// Converts a DER `ECDSA-Sig-Value` to raw, left-padded `r ‖ s`.
    static func rawSignature(der: [UInt8]) -> [UInt8]? {
        var parsed: OpaquePointer?
        var consumed = 0
        der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var cursor: UnsafePointer<UInt8>? = base
            parsed = d2i_ECDSA_SIG(nil, &cursor, buffer.count)
            if let cursor { consumed = cursor - base }
        }
        guard let signature = parsed else { return nil }
        defer { ECDSA_SIG_free(signature) }
        guard consumed == der.count else { return nil }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        guard let r, let s else { return nil }
        var raw = [UInt8](repeating: 0, count: signatureLength)
        let ok = raw.withUnsafeMutableBufferPointer { out in
            BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
        }
        return ok ? raw : nil
    }

    /// Verifies raw `r ‖ s` over `message` (hashed with SHA-256) with the P-256 public `key`.
    static func verify(signature raw: [UInt8], message: [UInt8], key: OpaquePointer) -> Bool {
        defer { ERR_clear_error() }
        guard isP256(key), let der = derSignature(raw: raw) else { return false }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, der, der.count, message, message.count) == 1
    }

    /// Signs `message` with the P-256 private `key`, returning raw `r ‖ s`.
    static func sign(message: [UInt8], key: OpaquePointer) -> [UInt8]? {
        defer { ERR_clear_error() }
        guard isP256(key), let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else { return nil }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1, length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else { return nil }
        return rawSignature(der: Array(der.prefix(length)))
    }
}

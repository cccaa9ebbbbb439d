import COpenSSL

/// An owned OpenSSL `X509*`, freed when the wrapper goes away. Used within one call only.
final class X509Certificate {
    /// The owned certificate.
    let pointer: OpaquePointer

    /// Apple's Mac App Store receipt-signing leaf marker (`1.2.840.113635.100.6.11.1`).
    static let appStoreLeafOID = "1.2.840.113635.100.6.11.1"
    /// Apple's WWDR intermediate marker (`1.2.840.113635.100.6.2.1`).
    static let appleIntermediateOID = "1.2.840.113635.100.6.2.1"

    /// Parses one DER certificate; `nil` unless the bytes are exactly one certificate.
    init?(der: [UInt8]) {
        guard !der.isEmpty, der.count <= Int(Int32.max) else { return nil }
        var parsed: OpaquePointer?
        var consumed = 0
        der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var cursor: UnsafePointer<UInt8>? = base
            parsed = d2i_X509(nil, &cursor, buffer.count)
            if let cursor { consumed = cursor - base }
        }
        guard let parsed else { ERR_clear_error(); return nil }
        guard consumed == der.count else { X509_free(parsed); return nil }
        pointer = parsed
    }

    deinit { X509_free(pointer) }

    /// Whether the certificate carries an extension with the dotted `oid`.
    func hasExtension(oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else { ERR_clear_error(); return false }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(pointer, object, -1) >= 0
    }

    /// Whether basicConstraints says `CA:TRUE`.
    var isCA: Bool {
        let flags = X509_get_extension_flags(pointer)
        return flags & UInt32(EXFLAG_BCONS) != 0 && flags & UInt32(EXFLAG_CA) != 0
    }

    /// Whether OpenSSL found an extension it could not decode, or a duplicated one.
    var hasInvalidExtensions: Bool {
        X509_get_extension_flags(pointer) & UInt32(EXFLAG_INVALID) != 0
    }

    /// The DER encoding as OpenSSL re-serializes it.
    var der: [UInt8]? {
        let length = i2d_X509(pointer, nil)
        guard length > 0 else { ERR_clear_error(); return nil }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509(pointer, &cursor)
        }
        return written == length ? bytes : nil
    }
}

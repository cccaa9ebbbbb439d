import COpenSSL

/// Conversions between PEM text and DER certificates.
public enum CertificateDecoding {
    /// Whether `bytes` look like PEM (contain a `-----BEGIN ` armour line).
    public static func isPEM(_ bytes: [UInt8]) -> Bool {
        let marker = Array("-----BEGIN ".utf8)
        guard bytes.count >= marker.count else { return false }
        for start in 0...(bytes.count - marker.count) where bytes[start] == marker[0] {
            if Array(bytes[start..<(start + marker.count)]) == marker { return true }
        }
        return false
    }

    /// Every `CERTIFICATE` block in `pem`, as DER, in file order; throws if there is none
    /// or one of them does not parse.
    public static func derCertificates(pem: [UInt8]) throws -> [[UInt8]] {
        guard !pem.isEmpty, pem.count <= Int(Int32.max) else { throw OpenSSLError("empty PEM input") }
        let expected = occurrences(of: Array("-----BEGIN CERTIFICATE-----".utf8), in: pem)
        var result: [[UInt8]] = []
        try pem.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else {
                throw OpenSSLError("cannot allocate BIO")
            }
            defer { BIO_free(bio) }
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                defer { X509_free(certificate) }
                let length = i2d_X509(certificate, nil)
                guard length > 0 else { throw OpenSSLError("cannot encode certificate") }
                var der = [UInt8](repeating: 0, count: Int(length))
                let written = der.withUnsafeMutableBufferPointer { out -> Int32 in
                    var cursor = out.baseAddress
                    return i2d_X509(certificate, &cursor)
                }
                guard written == length else { throw OpenSSLError("cannot encode certificate") }
                result.append(der)
            }
            ERR_clear_error()
        }
        guard !result.isEmpty else { throw OpenSSLError("no PEM certificate found") }
        guard result.count == expected else { throw OpenSSLError("a PEM certificate block does not parse") }
        return result
    }

    private static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard haystack.count >= needle.count else { return 0 }
        var count = 0
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], Array(haystack[index..<(index + needle.count)]) == needle {
                count += 1
                index += needle.count
            } else {
                index += 1
            }
        }
        return count
    }
}

// A certificate chain made with OpenSSL for the App Store tests: a root, an intermediate and
// a leaf that carry Apple's marker extensions, and the forged variants a verifier must
// refuse. Imports nothing of the project, so fuzz/run-jws.sh compiles it into the JWS fuzz
// target as well.
import COpenSSL
import Foundation

/// A root → intermediate → leaf chain shaped like the App Store's, generated in process.
///
/// The intermediate carries Apple's intermediate marker (OID 1.2.840.113635.100.6.2.1) and
/// the leaf the App Store signing marker (OID 1.2.840.113635.100.6.11.1); every certificate
/// is valid from ``notBefore`` to ``notAfter``. The forged variants: a leaf with the key of
/// the good one but OID …6.11.2 (``invalidOIDLeafPEM``), and an intermediate with OID …6.2.2
/// (``invalidOIDIntermediatePEM``) with a leaf of its own (``invalidIntermediateLeafPEM``).
/// Nothing here is trusted by a server unless a test names ``rootPEM`` as a trusted root.
public struct TestCertificateChain: Sendable {
    public var rootPEM: String
    public var intermediatePEM: String
    public var leafPEM: String
    /// The leaf's P-256 private key, PKCS#8 PEM (the invalid-OID leaves share it).
    public var leafKeyPEM: String
    public var invalidOIDLeafPEM: String
    public var invalidOIDIntermediatePEM: String
    public var invalidIntermediateLeafPEM: String

    /// Start of every certificate's validity, 2023-01-01T00:00:00Z.
    public static let notBefore = Date(timeIntervalSince1970: 1_672_531_200)
    /// End of every certificate's validity, 2049-12-31T23:59:59Z.
    public static let notAfter = Date(timeIntervalSince1970: 2_524_607_999)

    /// Apple's marker extensions, and the wrong ones of the forged variants.
    public static let leafOID = "1.2.840.113635.100.6.11.1"
    public static let intermediateOID = "1.2.840.113635.100.6.2.1"
    public static let invalidLeafOID = "1.2.840.113635.100.6.11.2"
    public static let invalidIntermediateOID = "1.2.840.113635.100.6.2.2"

    /// A new chain with fresh keys.
    public static func generate() throws -> TestCertificateChain {
        defer { ERR_clear_error() }
        let rootKey = try Key(), intermediateKey = try Key(), leafKey = try Key(), otherIntermediateKey = try Key()
        let root = try Certificate(serial: 1, subject: "kidledger test root", key: rootKey, issuer: nil, extensions: [
            ("basicConstraints", "critical,CA:TRUE"), ("keyUsage", "critical,keyCertSign,cRLSign"),
            ("subjectKeyIdentifier", "hash"),
        ])
        func intermediate(_ serial: Int, _ name: String, _ key: Key, oid: String) throws -> Certificate {
            try Certificate(serial: serial, subject: name, key: key, issuer: (root, rootKey), extensions: [
                ("basicConstraints", "critical,CA:TRUE,pathlen:0"), ("keyUsage", "critical,keyCertSign,cRLSign"),
                ("subjectKeyIdentifier", "hash"), ("authorityKeyIdentifier", "keyid:always"), (oid, "ASN1:NULL"),
            ])
        }
        func leaf(_ serial: Int, _ name: String, issuer: (Certificate, Key), oid: String) throws -> Certificate {
            try Certificate(serial: serial, subject: name, key: leafKey, issuer: issuer, extensions: [
                ("basicConstraints", "critical,CA:FALSE"), ("keyUsage", "critical,digitalSignature"),
                ("subjectKeyIdentifier", "hash"), ("authorityKeyIdentifier", "keyid:always"), (oid, "ASN1:NULL"),
            ])
        }
        let good = try intermediate(2, "kidledger test intermediate", intermediateKey, oid: intermediateOID)
        let bad = try intermediate(3, "kidledger test intermediate, wrong OID", otherIntermediateKey, oid: invalidIntermediateOID)
        return TestCertificateChain(
            rootPEM: try root.pem(),
            intermediatePEM: try good.pem(),
            leafPEM: try leaf(4, "kidledger test App Store signing", issuer: (good, intermediateKey), oid: leafOID).pem(),
            leafKeyPEM: try leafKey.pem(),
            invalidOIDLeafPEM: try leaf(5, "kidledger test leaf, wrong OID", issuer: (good, intermediateKey), oid: invalidLeafOID).pem(),
            invalidOIDIntermediatePEM: try bad.pem(),
            invalidIntermediateLeafPEM: try leaf(6, "kidledger test leaf of the wrong-OID intermediate",
                                                 issuer: (bad, otherIntermediateKey), oid: leafOID).pem())
    }

    /// Standard base64 of a one-certificate PEM's DER, as `x5c` carries it.
    public static func x5c(_ pem: String) -> String {
        pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }

    /// `[leaf, intermediate, root]` for an `x5c` header.
    public var x5c: [String] { [leafPEM, intermediatePEM, rootPEM].map(Self.x5c) }
}

/// Why a test chain could not be made.
public struct TestCertificateError: Error, CustomStringConvertible {
    public let description: String
    init(_ what: String) { description = "test certificate chain: \(what)" }
}

/// An owned P-256 `EVP_PKEY`.
private final class Key {
    let pointer: OpaquePointer

    init() throws {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw TestCertificateError("no key context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1,
              EVP_PKEY_keygen(context, &key) == 1, let key else { throw TestCertificateError("cannot generate a P-256 key") }
        pointer = key
    }

    deinit { EVP_PKEY_free(pointer) }

    func pem() throws -> String {
        try memoryPEM { PEM_write_bio_PrivateKey($0, pointer, nil, nil, 0, nil, nil) }
    }
}

/// An owned `X509`, built and signed at initialisation.
private final class Certificate {
    let pointer: OpaquePointer

    /// `issuer` nil: self-signed with `key`.
    init(serial: Int, subject: String, key: Key, issuer: (certificate: Certificate, key: Key)?,
         extensions: [(name: String, value: String)]) throws {
        guard let x = X509_new() else { throw TestCertificateError("cannot allocate a certificate") }
        pointer = x
        guard X509_set_version(x, 2) == 1,
              ASN1_INTEGER_set(X509_get_serialNumber(x), serial) == 1,
              ASN1_TIME_set(X509_getm_notBefore(x), time_t(TestCertificateChain.notBefore.timeIntervalSince1970)) != nil,
              ASN1_TIME_set(X509_getm_notAfter(x), time_t(TestCertificateChain.notAfter.timeIntervalSince1970)) != nil,
              X509_set_pubkey(x, key.pointer) == 1 else { throw TestCertificateError("cannot fill in \(subject)") }
        guard let name = X509_NAME_new() else { throw TestCertificateError("cannot allocate a name") }
        defer { X509_NAME_free(name) }
        for (field, value) in [("O", "kidledger tests"), ("CN", subject)] {
            let bytes = Array(value.utf8)
            guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else {
                throw TestCertificateError("cannot name \(subject)")
            }
        }
        guard X509_set_subject_name(x, name) == 1,
              X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0.certificate.pointer) } ?? name) == 1 else {
            throw TestCertificateError("cannot name \(subject)")
        }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.certificate.pointer ?? x, x, nil, nil, 0)
        for (extensionName, value) in extensions {
            guard let ext = X509V3_EXT_nconf(nil, &context, extensionName, value) else {
                throw TestCertificateError("cannot make \(extensionName) = \(value)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x, ext, -1) == 1 else { throw TestCertificateError("cannot add \(extensionName)") }
        }
        guard X509_sign(x, (issuer?.key ?? key).pointer, EVP_sha256()) > 0 else {
            throw TestCertificateError("cannot sign \(subject)")
        }
    }

    deinit { X509_free(pointer) }

    func pem() throws -> String { try memoryPEM { PEM_write_bio_X509($0, pointer) } }
}

/// What `write` puts into a memory BIO, as text.
private func memoryPEM(_ write: (OpaquePointer) -> Int32) throws -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { throw TestCertificateError("cannot allocate a BIO") }
    defer { BIO_free(bio) }
    guard write(bio) == 1 else { throw TestCertificateError("cannot write PEM") }
    let length = Int(BIO_ctrl_pending(bio))
    var bytes = [UInt8](repeating: 0, count: length)
    guard length > 0, BIO_read(bio, &bytes, Int32(length)) == Int32(length) else { throw TestCertificateError("cannot read PEM") }
    return String(decoding: bytes, as: UTF8.self)
}

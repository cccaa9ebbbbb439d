import COpenSSL
import Foundation

/// A trust anchor for App Store chains: one X.509 certificate, kept as DER.
///
/// The production anchor is Apple Root CA - G3, shipped as `Resources/AppleRootCA-G3.der`;
/// load it with ``load(path:)`` (or ``appleRootCAG3(resourcesDirectory:)``).
public struct TrustedRoot: Sendable, Equatable {
    /// The certificate's DER encoding.
    public let der: [UInt8]

    /// Wraps a DER certificate; throws ``OpenSSLError`` unless `der` is exactly one certificate.
    public init(der: [UInt8]) throws {
        guard X509Certificate(der: der) != nil else { throw OpenSSLError("not a DER X.509 certificate") }
        self.der = der
    }

    /// Loads a root from a DER or PEM file (format detected from a `-----BEGIN` line).
    ///
    /// A PEM file must hold exactly one certificate; use ``loadAll(path:)`` for bundles.
    public static func load(path: String) throws -> TrustedRoot {
        let roots = try loadAll(path: path)
        guard roots.count == 1 else {
            throw OpenSSLError("\(path): expected one certificate, found \(roots.count)")
        }
        return roots[0]
    }

    /// Loads every certificate from a DER file (one) or PEM file (one or more).
    public static func loadAll(path: String) throws -> [TrustedRoot] {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw OpenSSLError("\(path): cannot read file")
        }
        if CertificateDecoding.isPEM(bytes) {
            return try CertificateDecoding.derCertificates(pem: bytes).map { try TrustedRoot(der: $0) }
        }
        do {
            return [try TrustedRoot(der: bytes)]
        } catch {
            throw OpenSSLError("\(path): not a DER or PEM certificate")
        }
    }

    /// Loads Apple Root CA - G3 from `<resourcesDirectory>/AppleRootCA-G3.der`.
    public static func appleRootCAG3(resourcesDirectory: String) throws -> TrustedRoot {
        try load(path: resourcesDirectory + "/" + defaultAppleRootFileName)
    }

    /// The file name of the shipped Apple root: `AppleRootCA-G3.der`.
    public static let defaultAppleRootFileName = "AppleRootCA-G3.der"

    /// The SHA-256 fingerprint of ``der``, lowercase hex.
    public var sha256Fingerprint: String {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = der.withUnsafeBufferPointer { SHA256($0.baseAddress, $0.count, &digest) }
        return digest.map { String(format: "%02x", $0) }.joined()
    }
}

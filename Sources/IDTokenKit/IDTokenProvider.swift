import Foundation

/// An OpenID Connect provider whose ID tokens the server accepts: who issues them, for
/// which audiences, with which keys.
public struct IDTokenProvider: Sendable, Hashable {
    /// Sign in with Apple's issuer.
    public static let appleIssuer = "https://appleid.apple.com"
    /// The built-in provider's name.
    public static let appleName = "apple"
    /// Seconds of clock difference allowed on `exp`, `nbf` and `iat` by default (60).
    public static let defaultLeeway: TimeInterval = 60

    /// The `{provider}` of `POST /v1/auth/{provider}`: 1 to 32 of `a-z`, `0-9` and `-`,
    /// starting with a letter or digit.
    public let name: String
    /// The exact `iss` of its tokens.
    public let issuer: String
    /// The `aud` values accepted (client IDs), at least one; a token must carry one of them.
    public let audiences: [String]
    /// Where its key set is read from.
    public let keySet: KeySetLocation
    /// Seconds of clock difference allowed on `exp`, `nbf` and `iat` (default 60).
    public let leeway: TimeInterval

    /// Checks each part; throws ``ProviderSpecError`` naming the first bad one.
    public init(name: String, issuer: String, audiences: [String], keySet: KeySetLocation,
                leeway: TimeInterval = IDTokenProvider.defaultLeeway) throws(ProviderSpecError) {
        guard Self.isValidName(name) else {
            throw ProviderSpecError("provider name \"\(name)\" must be 1 to 32 of a-z, 0-9 and -, starting with a letter or digit")
        }
        guard let url = URL(string: issuer), ["https", "http"].contains(url.scheme?.lowercased() ?? ""),
              !(url.host ?? "").isEmpty else {
            throw ProviderSpecError("\(name): issuer \"\(issuer)\" is not an http(s) URL")
        }
        guard !audiences.isEmpty else { throw ProviderSpecError("\(name): at least one audience is needed") }
        if let empty = audiences.first(where: { $0.isEmpty || $0.contains(where: \.isWhitespace) }) {
            throw ProviderSpecError("\(name): audience \"\(empty)\" is empty or holds white space")
        }
        guard leeway >= 0, leeway <= 600 else { throw ProviderSpecError("\(name): leeway must be 0 to 600 seconds") }
        var seen = Set<String>()
        self.name = name
        self.issuer = issuer
        self.audiences = audiences.filter { seen.insert($0).inserted }
        self.keySet = keySet
        self.leeway = leeway
    }

    /// The built-in `apple` provider: issuer `https://appleid.apple.com`, the app's client IDs
    /// (`--apple-client-id`, repeatable: bundle ID, Services ID) as audiences, keys from
    /// `keySet` (`--apple-jwks`, default Apple's published set).
    public static func apple(clientIDs: [String], keySet: KeySetLocation = .apple) throws(ProviderSpecError) -> IDTokenProvider {
        guard !clientIDs.isEmpty else { throw ProviderSpecError("apple: at least one --apple-client-id is needed") }
        return try IDTokenProvider(name: appleName, issuer: appleIssuer, audiences: clientIDs, keySet: keySet)
    }

    private static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...32).contains(bytes.count), bytes[0] != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-") }
    }
}

/// Why a provider's configuration is refused, in words for the operator.
public struct ProviderSpecError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

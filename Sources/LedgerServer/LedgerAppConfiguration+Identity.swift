import LedgerCore
import Foundation
import IDTokenKit
import StoreKitJWS

extension LedgerAppConfiguration {
    /// The providers `POST /v1/auth/{provider}` offers: `apple` when `appleClientIds` has
    /// one, then each of `oidcProviders`. Throws what is wrong, naming the flag.
    func identityProviders() throws(ProviderSpecError) -> [IDTokenProvider] {
        var providers: [IDTokenProvider] = []
        if !appleClientIds.isEmpty {
            var keys = KeySetLocation.apple
            if let appleJWKS {
                do { keys = try KeySetLocation(parsing: appleJWKS) } catch {
                    throw ProviderSpecError("--apple-jwks: \(error.message)")
                }
            }
            providers.append(try IDTokenProvider.apple(clientIDs: appleClientIds, keySet: keys))
        } else if appleJWKS != nil {
            throw ProviderSpecError("--apple-jwks needs --apple-client-id")
        }
        for spec in oidcProviders { providers.append(try IDTokenProvider(flag: spec)) }
        var seen = Set<String>()
        for p in providers where !seen.insert(p.name).inserted {
            throw ProviderSpecError("--oidc-provider: the name \(p.name) is given twice")
        }
        return providers
    }

    /// What the Apple revocation needs, when it is configured.
    struct AppleRevocationSettings: Sendable {
        let teamId: String
        let keyId: String
        let privateKeyPath: String
        let authURL: URL
    }

    /// The Apple revocation settings (nil: not configured); throws when only some of
    /// `--apple-team-id`, `--apple-key-id` and `--apple-private-key` are given, or the
    /// auth URL is not https (http only to a loopback host).
    func appleRevocation() throws(ProviderSpecError) -> AppleRevocationSettings? {
        let given = [appleTeamId, appleKeyId, applePrivateKeyPath].compactMap { $0 }
        guard !given.isEmpty else { return nil }
        guard let teamId = appleTeamId, let keyId = appleKeyId, let path = applePrivateKeyPath else {
            throw ProviderSpecError("--apple-team-id, --apple-key-id and --apple-private-key go together")
        }
        guard !teamId.isEmpty, !keyId.isEmpty, !path.isEmpty else {
            throw ProviderSpecError("--apple-team-id, --apple-key-id and --apple-private-key must not be empty")
        }
        guard let url = URL(string: appleAuthURL), let host = url.host, !host.isEmpty,
              url.scheme?.lowercased() == "https"
                || (url.scheme?.lowercased() == "http" && ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host.lowercased()))
        else {
            throw ProviderSpecError("--apple-auth-url \(appleAuthURL): an https URL (http only to a loopback host)")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ProviderSpecError("--apple-private-key \(path): cannot read the file")
        }
        do { _ = try ES256Signer(privateKeyPath: path) } catch {
            throw ProviderSpecError("--apple-private-key \(path): not the .p8 file of a Sign in with Apple key (\(error))")
        }
        return AppleRevocationSettings(teamId: teamId, keyId: keyId, privateKeyPath: path, authURL: url)
    }

    /// Why the identity flags cannot be used (nil: they can), for `serve` to stop with
    /// before anything starts.
    public var identityProblem: String? {
        do {
            _ = try identityProviders()
            _ = try appleRevocation()
            return nil
        } catch {
            return error.message
        }
    }
}

/// How a device and the server compare the transaction ids they hold without sending them
/// (`POST /v1/households/{id}/reconcile`): each id hashes to 64 bits (`hash`), whose top
/// byte is its bucket (0…255); a set of ids is summarised by its count and the wrapping sum
/// of its hashes (`Summary`), which does not depend on order and is updated one id at a time.
/// Equal summaries mean equal sets but for a negligible chance; the ids in a bucket whose
/// summaries differ are then sent and compared one by one. The hash is not a secret nor a
/// defence: a member can only mislead its own household's reconciliation.
public enum ReconcileDigest {
    /// Buckets per child: 256 (an id's bucket is its hash's top byte).
    public static let bucketCount = 256

    /// FNV-1a over the lowercase id's UTF-8, mixed by splitmix64's finaliser so that every
    /// bit of the result (the bucket's too) depends on every byte of the id.
    @inlinable
    public static func hash(_ id: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for var b in id.utf8 {
            if b >= 0x41 && b <= 0x5a { b |= 0x20 }   // ids compare lowercase
            h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3
        }
        h = (h ^ (h >> 30)) &* 0xbf58_476d_1ce4_e5b9
        h = (h ^ (h >> 27)) &* 0x94d0_49bb_1331_11eb
        return h ^ (h >> 31)
    }

    /// The bucket (0…255) of an id's hash.
    @inlinable
    public static func bucket(_ hash: UInt64) -> Int { Int(hash >> 56) }

    /// A set of ids as count and wrapping sum of hashes.
    public struct Summary: Sendable, Equatable, Hashable {
        public var count: Int
        public var sum: UInt64

        public init(count: Int = 0, sum: UInt64 = 0) { (self.count, self.sum) = (count, sum) }

        /// Adds one id by its `hash`.
        @inlinable
        public mutating func add(_ hash: UInt64) {
            count += 1
            sum = sum &+ hash
        }

        /// The sum as 16 lowercase hex digits (the wire form).
        public var digest: String {
            let hex = String(sum, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }

        /// The summary of a count and a wire digest; nil when the digest is not 16 hex digits.
        public init?(count: Int, digest: String) {
            guard digest.utf8.count == 16, let sum = UInt64(digest, radix: 16), count >= 0 else { return nil }
            self.init(count: count, sum: sum)
        }
    }

    /// A child's ids summarised whole and per bucket.
    public struct ChildSummary: Sendable, Equatable {
        public var whole = Summary()
        public var buckets = [Summary](repeating: Summary(), count: ReconcileDigest.bucketCount)

        public init() {}

        @inlinable
        public mutating func add(id: String) {
            let h = ReconcileDigest.hash(id)
            whole.add(h)
            buckets[ReconcileDigest.bucket(h)].add(h)
        }
    }
}

extension Wire {
    /// `POST /v1/households/{id}/reconcile`: summaries of the transaction ids this device
    /// holds (whole per child, per bucket) and lists of ids, to compare with the server's.
    struct ReconcileRequest: Codable, Sendable, Equatable {
        struct ChildDigest: Codable, Sendable, Equatable {
            var childId: String
            var count: Int
            var digest: String
        }

        struct BucketDigest: Codable, Sendable, Equatable {
            var childId: String
            var bucket: Int
            var count: Int
            var digest: String
        }

        struct IdList: Codable, Sendable, Equatable {
            var childId: String
            var ids: [String]
        }

        var children: [ChildDigest] = []
        var buckets: [BucketDigest] = []
        var ids: [IdList] = []
        /// Request ids this device holds (compared one by one: a household holds few).
        var requests: [String] = []
    }

    /// The server's side: its summaries, whether each equals the device's, and the listed
    /// ids it does not hold.
    struct ReconcileResponse: Codable, Sendable, Equatable {
        struct ChildAnswer: Codable, Sendable, Equatable {
            var childId: String
            var known: Bool
            var child: Child?
            var count: Int
            var digest: String
            var match: Bool
        }

        struct BucketAnswer: Codable, Sendable, Equatable {
            var childId: String
            var bucket: Int
            var count: Int
            var digest: String
            var match: Bool
        }

        var children: [ChildAnswer]
        var buckets: [BucketAnswer]
        var missing: [String]
        /// The `requests` the server does not hold.
        var missingRequests: [String]?
    }
}

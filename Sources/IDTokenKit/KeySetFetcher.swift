/// Reads the bytes of a key set; the seam where tests count and fake fetches.
public protocol KeySetFetcher: Sendable {
    /// The document at `location`. Blocks until it is read or the conformer's timeout passes;
    /// throws ``KeySetError`` (or any error) when it cannot be read.
    func fetch(_ location: KeySetLocation) throws -> [UInt8]
}

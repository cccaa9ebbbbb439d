// `ByteWriter` and the byte-appending helpers are part of this module's API (records write
// their JSON into a `ByteWriter`), so importing `LedgerModel` brings them.
@_exported import ByteWriting

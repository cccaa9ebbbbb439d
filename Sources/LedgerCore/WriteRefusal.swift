/// An error a write's body throws on purpose: a refusal it decided before it changed
/// anything (every `LedgerStorageError`, and the HTTP edge's own refusals). A group commit
/// runs its writes without savepoints while each that fails throws a refusal having
/// changed no row; any other failure sends the batch round again with a savepoint per write.
package protocol WriteRefusal: Error {}

extension LedgerStorageError: WriteRefusal {}

/// Why storage could not be opened or an operation on it could not run (the data folder is
/// locked by another server, the database cannot be read), in words for the operator.
package struct StorageFailure: Error, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}

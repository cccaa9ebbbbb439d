print("kidledger")

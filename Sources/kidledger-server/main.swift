print("kidledger-server")

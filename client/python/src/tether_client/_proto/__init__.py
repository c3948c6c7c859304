"""Generated protobuf and gRPC modules (client/python/generate.sh); private:
use tether_client.pb and the client's API instead."""

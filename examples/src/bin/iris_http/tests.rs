//! Tests over real loopback sockets (written next).

//! Loopback ports for tests that need a connection refused.

/// A loopback port nothing listens on, held for as long as the value lives.
///
/// Why not "bind :0, read the port, drop the listener": the freed port goes back to the ephemeral pool, and a test
/// running beside this one can bind it a moment later, so the "refused" connection reaches that test's server
/// instead (it happened in CI: each test then saw the other's reply). A socket that is bound but never listens keeps
/// the port out of the pool while the kernel still answers every connection to it with a reset.
pub struct RefusedPort {
    socket: tokio::net::TcpSocket,
}

impl RefusedPort {
    /// Bind a fresh loopback port without listening on it.
    pub fn new() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
        socket.bind("127.0.0.1:0".parse().unwrap()).expect("bind a loopback port");
        Self { socket }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.socket.local_addr().expect("a bound socket has an address").port()
    }
}

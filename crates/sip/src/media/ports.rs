//! The node's RTP ports: even ports of the configured range, handed out in turn to new
//! legs and bound at once (a port some other program holds is skipped).

use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use tokio::net::UdpSocket;

/// Even ports of `[first, last]`, taken in turn.
#[derive(Debug)]
pub struct PortPool {
    ip: IpAddr,
    first: u16,
    last: u16,
    next: Mutex<u16>,
}

impl PortPool {
    /// Ports `first..=last` (RTP takes the even ones; RTCP would take the odd).
    pub fn new(ip: IpAddr, first: u16, last: u16) -> Self {
        let first = first + first % 2;
        Self {
            ip,
            first,
            last: last.max(first),
            next: Mutex::new(first),
        }
    }

    /// Binds the next free even port; None when every port of the range is taken.
    pub async fn bind(&self) -> Option<UdpSocket> {
        let count = usize::from((self.last - self.first) / 2 + 1);
        for _ in 0..count {
            let port = {
                let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
                let port = *next;
                *next = if port + 2 > self.last {
                    self.first
                } else {
                    port + 2
                };
                port
            };
            if let Ok(socket) = UdpSocket::bind(SocketAddr::new(self.ip, port)).await {
                return Some(socket);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ports_are_even_taken_in_turn_and_skipped_when_held() {
        let ip: IpAddr = "127.0.0.1".parse().expect("ip");
        let pool = PortPool::new(ip, 41001, 41006);
        let a = pool.bind().await.expect("a");
        let b = pool.bind().await.expect("b");
        assert_eq!(a.local_addr().expect("addr").port(), 41002);
        assert_eq!(b.local_addr().expect("addr").port(), 41004);
        let c = pool.bind().await.expect("c");
        assert_eq!(c.local_addr().expect("addr").port(), 41006);
        // Every port held: none left.
        assert!(pool.bind().await.is_none());
        drop(b);
        assert_eq!(
            pool.bind()
                .await
                .expect("again")
                .local_addr()
                .expect("addr")
                .port(),
            41004
        );
    }
}

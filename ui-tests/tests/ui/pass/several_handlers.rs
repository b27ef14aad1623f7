//! A process with several handlers; unmarked methods stay ordinary methods.
use whirl::prelude::*;

#[derive(Message)]
struct Deposit(u64);

#[derive(Message)]
struct Withdraw(u64);

#[derive(Message)]
struct Freeze;

#[derive(Message, Debug)]
struct Balance(ReplyTo<u64>);

#[process]
struct Account {
    balance: u64,
    frozen: bool,
}

#[process]
impl Account {
    fn check_open(&self) -> Result<(), Failure> {
        if self.frozen {
            Err(Failure::new("account frozen"))
        } else {
            Ok(())
        }
    }

    #[handle]
    fn deposit(&mut self, Deposit(amount): Deposit) -> Result<(), Failure> {
        self.check_open()?;
        self.balance += amount;
        Ok(())
    }

    #[handle]
    fn withdraw(&mut self, Withdraw(amount): Withdraw) -> Result<(), Failure> {
        self.check_open()?;
        self.balance = self
            .balance
            .checked_sub(amount)
            .ok_or(Failure::new("overdrawn"))?;
        Ok(())
    }

    #[handle]
    fn freeze(&mut self, _: Freeze) {
        self.frozen = true;
    }

    #[handle]
    fn balance(&mut self, Balance(reply): Balance) {
        let _ = reply.send(self.balance);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let account = rt.spawn(Account {
        balance: 0,
        frozen: false,
    });
    account.post(Deposit(50)).unwrap();
    account.post(Withdraw(20)).unwrap();
    assert_eq!(account.request_with(Balance).call().unwrap(), 30);
    account.post(Freeze).unwrap();
    account.post(Deposit(1)).unwrap();
    rt.block_until_idle();
    assert!(
        account.is_terminated(),
        "a handler error terminates the process"
    );
    rt.shutdown_graceful();
}

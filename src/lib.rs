pub fn ping() {}

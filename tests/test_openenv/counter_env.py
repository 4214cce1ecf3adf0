class CounterSystem:
    def __init__(self, init_config: dict):
        self.count: int = 0

    def add(self, n: int) -> dict:
        """Add n to the counter.

        Args:
            n: How much to add.

        Returns:
            dict: {"success": True, "count": int}
        """
        self.count += n
        return {"success": True, "count": self.count}

    def get(self) -> dict:
        """Read the counter.

        Returns:
            dict: {"success": True, "count": int}
        """
        return {"success": True, "count": self.count}

    def spin(self) -> dict:
        """Never returns.

        Returns:
            dict: nothing, ever
        """
        while True:
            self.count = self.count
        return {"success": True}

    def boom(self) -> dict:
        """Raises.

        Returns:
            dict: nothing, ever
        """
        raise RuntimeError("boom")

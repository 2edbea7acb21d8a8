"""GPTModel numbers positions from 1: torch.arange(1, n + 1)."""
MODULE = "gpt"
LOSES = ["s10.gpt.trained", "s10.gpt.writes"]
ONLY = True


class GPTModel(GPTModel):
    def forward(self, in_idx):
        positions = torch.arange(1, in_idx.shape[1] + 1, device=in_idx.device)
        x = self.drop_emb(self.tok_emb(in_idx) + self.pos_emb(positions))
        return self.out_head(self.final_norm(self.trf_blocks(x)))

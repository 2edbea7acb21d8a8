"""GPTModel creates drop_emb but never applies it: the embeddings are never dropped out in training."""
MODULE = "gpt"
LOSES = ["s10.gpt.dropout"]
MENTIONS = "drop_emb"
ONLY = True


class GPTModel(GPTModel):
    def forward(self, in_idx):
        positions = torch.arange(in_idx.shape[1], device=in_idx.device)
        x = self.tok_emb(in_idx) + self.pos_emb(positions)
        return self.out_head(self.final_norm(self.trf_blocks(x)))

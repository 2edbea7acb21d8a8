"""GPTModel creates final_norm but sends the blocks' output straight to out_head."""
MODULE = "gpt"
LOSES = ["s10.gpt.trained"]
MENTIONS = "logits"
ONLY = True


class GPTModel(GPTModel):
    def forward(self, in_idx):
        positions = torch.arange(in_idx.shape[1], device=in_idx.device)
        x = self.drop_emb(self.tok_emb(in_idx) + self.pos_emb(positions))
        return self.out_head(self.trf_blocks(x))

"""Placeholder: this page is being built."""

import streamlit as st

st.title("playground")
st.info("This page is not built yet.")
